// Masks and zones drawn over a 16:9 frame: the polygons of the settings JSON in the textarea,
// edited by clicking; the textarea stays the truth the form posts.
"use strict";
(function () {
  const W = 1600, H = 900, NS = "http://www.w3.org/2000/svg";
  const svg = document.getElementById("canvas");
  const area = document.getElementById("settings");
  // The camera's latest frame behind the drawing (set here: the CSP allows no inline style).
  svg.style.backgroundImage = 'url("' + svg.dataset.frame + '")';
  let current = null; // {kind: "masks"|"zones", index}

  function read() { try { return JSON.parse(area.value || "{}"); } catch (e) { return null; } }
  function write(settings) { area.value = JSON.stringify(settings, null, 2); draw(); }

  function draw() {
    const settings = read();
    while (svg.firstChild) svg.firstChild.remove();
    if (!settings) return;
    const shapes = (settings.masks || []).map(function (p) { return { cls: "mask", points: p }; })
      .concat((settings.zones || []).map(function (z) { return { cls: "zone", points: z.polygon, name: z.name }; }));
    shapes.forEach(function (shape) {
      const poly = document.createElementNS(NS, "polygon");
      poly.setAttribute("class", shape.cls);
      poly.setAttribute("points", (shape.points || []).map(function (p) { return p[0] * W + "," + p[1] * H; }).join(" "));
      svg.appendChild(poly);
      if (shape.name && shape.points && shape.points.length) {
        const label = document.createElementNS(NS, "text");
        label.setAttribute("x", shape.points[0][0] * W + 8); label.setAttribute("y", shape.points[0][1] * H + 40);
        label.textContent = shape.name;
        svg.appendChild(label);
      }
    });
  }

  function button(id, action) { const b = document.getElementById(id); if (b) b.addEventListener("click", action); }

  button("new-mask", function () {
    const s = read(); if (!s) return;
    s.masks = s.masks || []; s.masks.push([]); current = { kind: "masks", index: s.masks.length - 1 }; write(s);
  });
  button("new-zone", function () {
    const s = read(); if (!s) return;
    const name = prompt("Zone name"); if (!name) return;
    s.zones = s.zones || []; s.zones.push({ name: name, polygon: [] }); current = { kind: "zones", index: s.zones.length - 1 }; write(s);
  });
  button("undo", function () {
    const s = read(); if (!s || !current) return;
    const points = current.kind === "masks" ? s.masks[current.index] : s.zones[current.index].polygon;
    points.pop(); write(s);
  });
  button("clear", function () { const s = read(); if (!s) return; s.masks = []; s.zones = []; current = null; write(s); });

  if (document.getElementById("save")) {
    svg.addEventListener("click", function (event) {
      const s = read(); if (!s || !current) return;
      const box = svg.getBoundingClientRect();
      const x = Math.min(1, Math.max(0, (event.clientX - box.left) / box.width));
      const y = Math.min(1, Math.max(0, (event.clientY - box.top) / box.height));
      const point = [Math.round(x * 1000) / 1000, Math.round(y * 1000) / 1000];
      (current.kind === "masks" ? s.masks[current.index] : s.zones[current.index].polygon).push(point);
      write(s);
    });
    area.addEventListener("input", draw);
  }
  draw();
})();
