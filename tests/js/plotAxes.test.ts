import { describe, expect, it } from "vitest";
import { fittedTicks, indexRange, indexTicks, labelExtent, squareCells, tickStep } from "../../js/src/panel/plotAxes";

const SIZES = [1, 2, 3, 4, 7, 10, 16, 64, 100, 256, 999, 1000, 4096, 10000];

describe("index axes of a plot", () => {
  it("span exactly the data's cells, whatever the size", () => {
    for (const n of SIZES) {
      expect(indexRange(n)).toEqual([-0.5, n - 0.5]);
      expect(indexRange(n, true)).toEqual([n - 0.5, -0.5]);
    }
  });

  it("space ticks so that no two labels overlap, from 1 cell to 10,000 on 20 to 1000 px", () => {
    for (const n of SIZES)
      for (const px of [20, 40, 75, 150, 300, 600, 1000])
        for (const across of [true, false])
          for (const font of [8, 10]) {
            const { tickvals } = indexTicks(n, px, across, font) as { tickvals: number[] };
            expect(tickvals[0]).toBe(0);
            expect(tickvals[tickvals.length - 1]).toBeLessThanOrEqual(n - 1); // none past the last cell
            const dtick = tickvals.length > 1 ? tickvals[1] - tickvals[0] : n;
            expect(Number.isInteger(dtick) && dtick >= 1).toBe(true);
            // two neighbouring ticks stand at least a label apart, or there is one tick only
            if (dtick < n) expect((dtick * px) / n).toBeGreaterThanOrEqual(labelExtent(n, across, font));
            // and not needlessly sparse: the next smaller nice step would overlap
            const smaller = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000].filter((s) => s < dtick).pop();
            if (smaller) expect((smaller * px) / n).toBeLessThan(labelExtent(n, across, font));
          }
  });

  it("ticks every cell of a short axis with room (a 4-feature head: 0 1 2 3)", () => {
    expect(tickStep(4, 60, labelExtent(4, true, 8))).toBe(1);
    expect(tickStep(256, 200, labelExtent(256, false, 8))).toBe(20);
  });

  it("keep square cells only for tiles no thinner than 1:3", () => {
    expect(squareCells(7, 7)).toBe(true);
    expect(squareCells(16, 8)).toBe(true);
    expect(squareCells(256, 4)).toBe(false);
    expect(squareCells(1, 10000)).toBe(false);
  });

  it("refit the ticks for the px Plotly gave each axis", () => {
    const full = { xaxis: { _length: 40, tickvals: [0, 1], tickfont: { size: 8 } }, yaxis: { _length: 400 } };
    const upd = fittedTicks(full, { xaxis: 256, yaxis: 256 });
    expect(upd["xaxis.tickvals"]).toEqual([0, 200]);
    expect((upd["yaxis.tickvals"] as number[]).slice(0, 3)).toEqual([0, 10, 20]);
    expect(fittedTicks({ xaxis: { _length: 40, tickvals: [0, 200], tickfont: { size: 8 } } }, { xaxis: 256 })).toEqual(
      {},
    );
  });
});
