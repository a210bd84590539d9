// The page's only script: expand or collapse every expert call, and filter tables.
(function () {
  function setAll(selector, open) {
    document.querySelectorAll(selector).forEach(function (d) { d.open = open; });
  }
  document.querySelectorAll("[data-expand]").forEach(function (button) {
    button.addEventListener("click", function () {
      setAll(button.getAttribute("data-expand"), button.getAttribute("data-open") === "1");
    });
  });
  var filter = document.getElementById("filter-text");
  var status = document.getElementById("filter-status");
  var rows = document.querySelectorAll("tr[data-filter]");
  function applyFilter() {
    var text = filter ? filter.value.toLowerCase() : "";
    var want = status ? status.value : "";
    var shown = 0;
    rows.forEach(function (row) {
      var ok = (!text || row.getAttribute("data-filter").indexOf(text) !== -1) &&
        (!want || row.getAttribute("data-status") === want);
      row.classList.toggle("hidden", !ok);
      if (ok) shown += 1;
    });
    var count = document.getElementById("filter-count");
    if (count) count.textContent = shown + " of " + rows.length + " items";
  }
  if (filter) filter.addEventListener("input", applyFilter);
  if (status) status.addEventListener("change", applyFilter);
  if (rows.length) applyFilter();
})();
