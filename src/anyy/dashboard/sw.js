// The Dashboard's service worker (docs/remote.md): it shows the Gateway's Web Push messages on a paired
// device (a title and the session's name; the text only if the device allowed it) and opens the session a
// tap names. It caches nothing: the Dashboard is always the Gateway's current one.
self.addEventListener("push", (event) => {
  let data = {};
  try {
    data = event.data ? event.data.json() : {};
  } catch {
    data = {};
  }
  const body = [data.session, data.text].filter(Boolean).join(" — ");
  event.waitUntil(
    self.registration.showNotification(data.title || "anyy", {
      body,
      tag: data.session_id || "anyy",
      data: { url: typeof data.url === "string" && data.url.startsWith("/#") ? data.url : "/" },
    }),
  );
});

self.addEventListener("notificationclick", (event) => {
  event.notification.close();
  const url = new URL(event.notification.data?.url || "/", self.location.origin).href;
  event.waitUntil(
    self.clients.matchAll({ type: "window" }).then((open) => {
      for (const client of open) {
        if ("navigate" in client) return client.navigate(url).then((c) => c && c.focus());
      }
      return self.clients.openWindow(url);
    }),
  );
});
