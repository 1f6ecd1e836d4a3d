// A module's outputs, read from the payload's one list: the box's shape line and tooltip say
// all of them (a detector head's class logits and box deltas, not only the tensor made last),
// the rolled view's box says them only when every pass agrees, and a few outputs of the
// model are titled by their names ("boxes, labels, scores", not "0 ×3").
import { describe, expect, it } from "vitest";
import { outputGroupTitle } from "../../js/src/graph/folds";
import { outputsNamedText, outputsShapeText, passOutputs } from "../../js/src/graph/moduleOutputs";
import type { ModuleInfo, ModuleOutputInfo } from "../../js/src/graph/protocol";
import { buildModel } from "../../js/src/graph/tree";
import { groupLines } from "../../js/src/layout/labels";
import { hoverText } from "../../js/src/render/hoverText";
import { edge, node, payload } from "./builders";

const out = (path: string, node: string, shape: number[] | null, output = 0): ModuleOutputInfo => ({
  path,
  node,
  output,
  shape,
});

/** A predictor box of two linears: class logits made first, box deltas last. */
function predictor(outputs: ModuleOutputInfo[][] | undefined) {
  const nodes = [
    node("input.0", [], { kind: "input", shape: [150, 32] }),
    node("cls_1", ["head:1"], { shape: [150, 5] }),
    node("box_1", ["head:1"], { shape: [150, 20] }),
    node("output.0", [], { kind: "output", shape: [150, 5] }),
    node("output.1", [], { kind: "output", shape: [150, 20] }),
  ];
  const edges = [
    edge("input.0", "cls_1"),
    edge("input.0", "box_1"),
    edge("cls_1", "output.0"),
    edge("box_1", "output.1"),
  ];
  const head: ModuleInfo = { address: "head", className: "FastRCNNPredictor", parent: "", nPasses: 1, nOps: 2 };
  if (outputs) head.outputs = outputs;
  return payload(nodes, edges, [head]);
}

describe("a module's outputs", () => {
  const both = [[out("0", "cls_1", [150, 5]), out("1", "box_1", [150, 20])]];

  it("are all on its box's shape line, not only the last one made", () => {
    const m = buildModel(predictor(both), "unrolled");
    const g = m.groups.get("head:1")!;
    expect(groupLines(g, "unrolled")[2]).toBe("2 ops → 150×5, 150×20");
    expect(hoverText(m, { type: "item", id: "@head:1" })).toContain("→ 0 150×5, 1 150×20");
    // without the list (a payload of before), the last value leaving the box, as before
    const old = buildModel(predictor(undefined), "unrolled");
    expect(groupLines(old.groups.get("head:1")!, "unrolled")[2]).toBe("2 ops → 150×20");
  });

  it("read as a count past what a box holds, named in the tooltip", () => {
    const many = ["0", "1", "2", "3", "pool"].map((p, i) => out(p, `n${i}`, [1, 16, 64, 64]));
    expect(outputsShapeText(many)).toBe("5 outputs");
    expect(outputsNamedText(many)).toContain("pool 1×16×64×64");
    expect(outputsShapeText([out("", "n", [])])).toBe("scalar");
  });

  it("in the rolled view are those every pass shares, else none", () => {
    const mod = (outputs: ModuleOutputInfo[][]): ModuleInfo => ({
      address: "rnn",
      className: "Cell",
      parent: "",
      nPasses: outputs.length,
      nOps: 1,
      outputs,
    });
    const same = mod([[out("0", "a:1", [2, 8])], [out("0", "a:2", [2, 8])]]);
    expect(passOutputs(same, null)).toEqual([out("0", "a:1", [2, 8])]);
    expect(passOutputs(same, 2)).toEqual([out("0", "a:2", [2, 8])]);
    const differ = mod([[out("0", "a:1", [2, 8])], [out("0", "a:2", [3, 8])]]);
    expect(passOutputs(differ, null)).toBeNull();
    expect(passOutputs(differ, 2)?.[0].shape).toEqual([3, 8]);
    expect(passOutputs(undefined, 1)).toBeNull();
  });
});

describe("a model's outputs", () => {
  it("are titled by their names when a few, by kind and count when many", () => {
    const members = ["output.0.boxes", "output.0.labels", "output.0.scores"];
    expect(outputGroupTitle({ address: "output.0", className: "0", members })).toBe("boxes, labels, scores");
    const numbered = ["output.kv.0", "output.kv.1"];
    expect(outputGroupTitle({ address: "output.kv", className: "kv", members: numbered })).toBe("kv ×2");
    const cache = Array.from({ length: 48 }, (_, i) => `output.past_key_values.${i}`);
    expect(outputGroupTitle({ address: "output.past_key_values", className: "past_key_values", members: cache })).toBe(
      "past_key_values ×48",
    );
  });
});
