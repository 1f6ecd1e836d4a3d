import { describe, expect, it } from "vitest";
import { autoHeight, DEFAULT_HEIGHT, graphHeight, MAX_HEIGHT, MIN_HEIGHT } from "../../js/src/controls/heightHandle";

describe("graph height", () => {
  it("takes the trait's value within the Python trait's bounds", () => {
    expect(graphHeight(900)).toBe(900);
    expect(graphHeight(899.6)).toBe(900);
    expect(graphHeight(10)).toBe(MIN_HEIGHT);
    expect(graphHeight(1e9)).toBe(MAX_HEIGHT);
  });

  it("falls back to the default for a page or notebook saved before the trait existed", () => {
    expect(graphHeight(undefined)).toBe(DEFAULT_HEIGHT);
    expect(graphHeight(Number.NaN)).toBe(DEFAULT_HEIGHT);
    expect(graphHeight("900")).toBe(DEFAULT_HEIGHT);
    expect(DEFAULT_HEIGHT).toBe(620);
  });

  it("fills a notebook's visible height with none set, within bounds", () => {
    expect(autoHeight(null, 100)).toBe(DEFAULT_HEIGHT); // no scrolled panel around it
    const panel = (px: number) => ({ px, fit: false });
    expect(autoHeight(panel(880), 100)).toBe(740); // JupyterLab at 1000 px: less the bars and a margin
    expect(autoHeight(panel(500), 100)).toBe(DEFAULT_HEIGHT); // never smaller than before
    expect(autoHeight(panel(3000), 100)).toBe(1000);
  });

  it("fits the whole widget in a host's scrolled output (marimo's 610 px box)", () => {
    const output = (px: number) => ({ px, fit: true });
    expect(autoHeight(output(610), 87)).toBe(610 - 87 - 8); // bars and graph inside the box
    expect(autoHeight(output(610), 87) + 87).toBeLessThan(610);
    expect(autoHeight(output(300), 87)).toBe(360); // too small to read: the output scrolls instead
    expect(autoHeight(output(4000), 87)).toBe(1000);
  });
});
