import { describe, expect, it } from "vitest";
import { Gradients, gradientsOf } from "../../js/src/graph/gradients";
import type { BackwardNodeInfo, GradientInfo, LeafInfo } from "../../js/src/graph/protocol";
import { buildModel } from "../../js/src/graph/tree";
import { computeVisible } from "../../js/src/graph/visibility";
import { gradientCaption } from "../../js/src/panel/format";
import { itemValues, metricInfo, offeredMetrics, starvedItems } from "../../js/src/render/overlay";
import { nested } from "./builders";

function leaf(name: string, received: boolean, label: string | null = name): LeafInfo {
  return {
    name,
    kind: "param",
    shape: [4, 4],
    dtype: "float32",
    label,
    source: "",
    received,
    passes: received ? [1] : [],
    gradNorm: received ? 1 : null,
  };
}

function bw(
  id: string,
  order: number,
  forwardOp: string | null,
  next: string[] = [],
  leafName: string | null = null,
  withinOp: string | null = null,
): BackwardNodeInfo {
  return {
    id,
    gradFn: id.replace(/_\d+$/, ""),
    forwardOp,
    withinOp,
    order,
    passes: [1],
    gradShapes: ["1x4"],
    leaf: leafName,
    next,
  };
}

function info(): GradientInfo {
  return {
    passes: [
      {
        index: 1,
        call: "backward",
        retainGraph: true,
        source: "t.py:3",
        nodes: ["MulBackward0_0", "AddmmBackward0_1", "AccumulateGrad_2"],
        error: null,
        errorOp: null,
        errorSource: null,
        freedBy: null,
        inTransform: false,
      },
      {
        index: 2,
        call: "backward",
        retainGraph: false,
        source: "t.py:4",
        nodes: [],
        error: "Trying to backward through the graph a second time",
        errorOp: "lin_1",
        errorSource: "m.py:1",
        freedBy: 1,
        inTransform: false,
      },
    ],
    leaves: [leaf("a.w", true), leaf("b.w", false), leaf("c.w", false, null)],
    noGrad: ["x_2", "b.w"],
    backward: [
      bw("AccumulateGrad_2", 2, null, [], "a.w"),
      bw("MulBackward0_0", 0, "y_2", ["AddmmBackward0_1"]),
      bw("AddmmBackward0_1", 1, "lin_1", ["AccumulateGrad_2"]),
    ],
  };
}

describe("Gradients", () => {
  it("lists leaves that got no gradient first and knows which sources starved", () => {
    const g = new Gradients(info());
    expect(g.leaves.map((l) => l.name)).toEqual(["b.w", "c.w", "a.w"]);
    expect(g.starvedCount).toBe(2);
    expect([...g.starvedLeaves]).toEqual(["b.w"]); // c.w has no node in the graph
    expect(g.noGrad.has("x_2")).toBe(true);
  });

  it("splits passes that ran from those that raised, and orders each pass's nodes", () => {
    const g = new Gradients(info());
    expect(g.completedPasses.map((p) => p.index)).toEqual([1]);
    expect(g.failedPasses.map((p) => p.errorOp)).toEqual(["lin_1"]);
    expect(g.nodesOf(1).map((n) => n.gradFn)).toEqual(["MulBackward0", "AddmmBackward0", "AccumulateGrad"]);
    expect(g.nodesOf(2)).toEqual([]);
    expect(g.nodesOf(7)).toEqual([]);
    expect(g.backwardOf("lin_1").map((n) => n.id)).toEqual(["AddmmBackward0_1"]);
    expect(g.backwardOf("act_1")).toEqual([]);
  });

  it("offers no pass run inside a torch.func transform for a gradient: it kept none", () => {
    const data = info();
    data.passes.push({ ...data.passes[0], index: 3, inTransform: true });
    const g = new Gradients(data);
    expect(g.completedPasses.map((p) => p.index)).toEqual([1]);
    expect(g.nodesOf(3).map((n) => n.gradFn)).toEqual(["MulBackward0", "AddmmBackward0", "AccumulateGrad"]);
  });

  it("counts the nodes of an op's internals as that op's backward, after its own", () => {
    const data = info();
    data.backward = [
      bw("ViewBackward0_1", 0, "lin_1", ["MmBackward0_1"]),
      bw("MmBackward0_1", 1, null, ["TBackward0_1"], null, "lin_1"),
      bw("TBackward0_1", 2, null, [], null, "lin_1"),
      bw("MulBackward0_1", 3, null, []),
    ];
    const g = new Gradients(data);
    expect(g.backwardOf("lin_1").map((n) => n.gradFn)).toEqual(["ViewBackward0", "MmBackward0", "TBackward0"]);
    expect(g.node("MulBackward0_1")?.withinOp).toBeNull();
  });

  it("is null for a payload without gradients", () => {
    expect(gradientsOf(undefined)).toBeNull();
    expect(gradientsOf(info())).toBeInstanceOf(Gradients);
  });
});

describe("gradient metrics", () => {
  it("are offered only for a log with gradients; the norm aggregates by max", () => {
    expect(offeredMetrics(false, false).some((m) => m.grads)).toBe(false);
    expect(offeredMetrics(false, true).map((m) => m.name)).toContain("gradNorm");
    expect(offeredMetrics(false, true).some((m) => m.compare)).toBe(false);
    expect(offeredMetrics(true, true).map((m) => m.name)).toEqual(expect.arrayContaining(["relL2", "gradNorm"]));
    expect(metricInfo("gradNorm").agg).toBe("max");
    const m = buildModel(nested(), "unrolled");
    const vis = computeVisible(m, { expanded: new Set(), showParams: false });
    const norms = new Map([
      ["lin_1", 0.5],
      ["act_1", 2],
      ["x_1", 7],
      ["y_1", NaN], // no gradient reached it
    ]);
    const got = itemValues(m, vis, norms, metricInfo("gradNorm").agg);
    expect(got.get("@a:1")).toBe(2);
    expect(got.get("@b:1")).toBe(7);
  });
});

describe("starvedItems", () => {
  it("marks a starved param, the op reading it, and the collapsed module holding them", () => {
    const m = buildModel(nested(), "unrolled");
    const closed = computeVisible(m, { expanded: new Set(), showParams: true });
    expect([...starvedItems(m, closed, new Set(["a.w"]))]).toEqual(["@a:1"]);
    const open = computeVisible(m, { expanded: new Set(["a", "b"]), showParams: true });
    expect([...starvedItems(m, open, new Set(["a.w"]))].sort()).toEqual(["a.w", "lin_1"]);
    expect(starvedItems(m, open, new Set()).size).toBe(0);
    expect(starvedItems(m, open, new Set(["input.0"]))).toEqual(new Set(["input.0"]));
  });
});

describe("gradientCaption", () => {
  it("says it is a gradient and of which pass", () => {
    expect(gradientCaption({ nPasses: 1 })).toBe("gradient of the loss w.r.t. this output");
    expect(gradientCaption({ nPasses: 2 })).toBe(
      "gradient of the loss w.r.t. this output, summed over 2 backward passes",
    );
    expect(gradientCaption({ backwardPass: 2, nPasses: 2 })).toContain("backward pass 2");
  });
});
