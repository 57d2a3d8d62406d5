// Progressive enhancement only: every page works without this script.
// The list of keys refreshes itself every 15 s while nobody is using a
// form on it, so a key an operator just settled elsewhere leaves it.
(function () {
  if (!document.getElementById("keys") && !document.getElementById("no-keys")) return;
  setInterval(function () {
    var a = document.activeElement;
    if (a && a.closest && a.closest("form")) return;
    location.reload();
  }, 15000);
})();
