import { describe, expect, it } from "vitest";
import { miniFit } from "../../js/src/render/minimap";
import { minimapLabels } from "../../js/src/render/minimapLabels";
import { gpt, nested, rng, wide } from "./builders";
import { allGroups, laidOut } from "./geometry";

const measure = (t: string): number => 5.5 * t.length; // a 9 px monospace

describe("minimap names", () => {
  it("names the first-level modules, then their children where there is room, never overlapping", () => {
    const p = gpt(6);
    const { m, v, scene, geoms } = laidOut(p, [...allGroups(p, "unrolled")]);
    const frame = { model: m, vis: v, scene, edges: geoms };
    const fit = miniFit(scene.bounds);
    const labels = minimapLabels(frame, fit, measure);
    const depth = (key: string) => m.groups.get(key.replace(/^@/, ""))?.depth ?? 99;
    expect(labels.length).toBeGreaterThan(0);
    expect(labels.some((l) => depth(l.key) === 1)).toBe(true);
    for (const l of labels) {
      expect(l.x).toBeGreaterThanOrEqual(0);
      expect(l.x + l.w).toBeLessThanOrEqual(fit.w);
      for (const o of labels)
        if (o !== l) expect(l.x < o.x + o.w && l.x + l.w > o.x && l.y < o.y + o.h && l.y + l.h > o.y).toBe(false);
    }
  });
});

describe("minimap names over many layouts", () => {
  it("are pairwise disjoint and inside the minimap, whatever the model, expansion, size and font", () => {
    const rand = rng(7);
    const models = [
      () => gpt(1 + Math.floor(rand() * 12)),
      () => wide(2 + Math.floor(rand() * 8), 1 + Math.floor(rand() * 4), 1 + Math.floor(rand() * 3)),
      nested,
    ];
    let named = 0;
    let crowded = 0; // layouts where some name was refused for want of room
    for (let t = 0; t < 120; t++) {
      const p = models[Math.floor(rand() * models.length)]();
      const groups = allGroups(p, "unrolled");
      // a module opens with the modules around it (as the widget opens them)
      const chosen = groups.filter(() => rand() < 0.6);
      const open = groups.filter((g) => chosen.some((c) => c === g || c.startsWith(`${g}.`)));
      const { m, v, scene, geoms } = laidOut(p, open);
      const frame = { model: m, vis: v, scene, edges: geoms };
      const fit = miniFit(scene.bounds, 0.5 + rand() * 0.5);
      const charW = 3 + rand() * 5;
      const labels = minimapLabels(frame, fit, (s) => charW * s.length);
      named += labels.length;
      if (labels.length < groups.length) crowded++;
      for (const [i, l] of labels.entries()) {
        expect(l.x).toBeGreaterThanOrEqual(0);
        expect(l.y).toBeGreaterThanOrEqual(0);
        expect(l.x + l.w).toBeLessThanOrEqual(fit.w);
        expect(l.y + l.h).toBeLessThanOrEqual(fit.h);
        for (const o of labels.slice(i + 1)) {
          const overlap = l.x < o.x + o.w && l.x + l.w > o.x && l.y < o.y + o.h && l.y + l.h > o.y;
          expect(overlap, `"${l.text}" and "${o.text}" overlap (case ${t})`).toBe(false);
        }
      }
    }
    expect(named).toBeGreaterThan(120); // names were drawn, not all refused
    expect(crowded).toBeGreaterThan(20); // and the refusal was put to the test
  });
});
