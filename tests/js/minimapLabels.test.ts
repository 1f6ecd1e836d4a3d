import { describe, expect, it } from "vitest";
import { miniFit } from "../../js/src/render/minimap";
import { minimapLabels } from "../../js/src/render/minimapLabels";
import { gpt } from "./builders";
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
