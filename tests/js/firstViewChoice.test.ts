// A recurrent model opens rolled when its unrolled first view would not fit, saying why.
import { describe, expect, it } from "vitest";
import { opensRolled, rolledHint } from "../../js/src/graph/firstViewChoice";
import { FIRST_MIN_SCALE, FIRST_READ_SCALE } from "../../js/src/render/camera";
import { edge, node, payload } from "./builders";

function gruLoop(recurrent: boolean) {
  const p = payload(
    [node("input.0", [], { kind: "input", func: "input.0" }), node("gru_cell_1_4", ["cell:1"])],
    [edge("input.0", "gru_cell_1_4")],
  );
  p.modelClass = "GRUCellLM";
  p.rolled.nodes = [
    p.rolled.nodes[0],
    node("gru_cell_1_4", ["cell"], { func: "gru_cell", module: "cell", nPasses: 10 }),
  ];
  if (recurrent) p.recurrentLayers = ["gru_cell_1_4"];
  return p;
}

describe("opensRolled", () => {
  it("opens a recurrent model rolled only when unrolled it would not fit", () => {
    expect(opensRolled(gruLoop(true), FIRST_MIN_SCALE / 2)).toBe(true);
    expect(opensRolled(gruLoop(true), FIRST_MIN_SCALE)).toBe(true); // fits, but small: rolled
    expect(opensRolled(gruLoop(true), FIRST_READ_SCALE)).toBe(false); // fits, readable: unrolled
    expect(opensRolled(gruLoop(false), 0.1)).toBe(false); // not recurrent: unrolled, however large
  });

  it("says what recurs and why the view is rolled", () => {
    const text = rolledHint(gruLoop(true));
    expect(text).toContain("GRUCellLM is recurrent");
    expect(text).toContain("gru_cell in cell runs 10 times");
    expect(text).toContain("do not fit");
  });
});
