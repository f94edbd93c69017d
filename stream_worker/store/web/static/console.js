// What every console page does in script rather than in inline handlers, which the
// Content-Security-Policy forbids: plate pictures that fail to load are removed, forms marked
// data-confirm ask first, the camera-id form opens that camera's page, the error page's Back link.
"use strict";
(function () {
  // One URL path segment, as paths.segment does on the server: a bare "." or ".." gets an
  // encoded "/" before it (a browser would resolve it and walk up; the server routes it nowhere).
  function segment(value) {
    const encoded = encodeURIComponent(value);
    return encoded === "." || encoded === ".." ? "%2F" + encoded : encoded;
  }

  function gone(img) { if (img.matches("img[data-gone-on-error]")) img.remove(); }
  document.addEventListener("error", function (event) { if (event.target instanceof HTMLImageElement) gone(event.target); }, true);
  document.querySelectorAll("img[data-gone-on-error]").forEach(function (img) {
    if (img.complete && img.naturalWidth === 0 && img.getAttribute("loading") !== "lazy") gone(img);
  });

  document.querySelectorAll("form[data-confirm]").forEach(function (form) {
    form.addEventListener("submit", function (event) { if (!confirm(form.dataset.confirm)) event.preventDefault(); });
  });

  const configure = document.getElementById("configure-camera");
  if (configure) {
    configure.addEventListener("submit", function (event) {
      event.preventDefault();
      location.href = "/cameras/" + segment(configure.elements.camera.value);
    });
  }

  const back = document.getElementById("back");
  if (back && history.length > 1) {
    back.addEventListener("click", function (event) { event.preventDefault(); history.back(); });
  }
})();
