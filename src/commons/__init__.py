"""Low-level helpers shared by anyy and ameesh. Imports neither application."""
