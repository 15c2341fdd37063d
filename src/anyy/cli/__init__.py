"""The `anyy` command line (`main`): one module per command group; each command imports what it needs."""
