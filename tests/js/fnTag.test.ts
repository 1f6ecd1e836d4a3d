// A closed function box's "fn" tag sits in its top-left corner; the centred title must start
// right of it (#36 item 5: the tag overlapped the title).
import { describe, expect, it } from "vitest";
import { buildModel } from "../../js/src/graph/tree";
import {
  DEFAULT_METRICS,
  FN_TAG,
  FN_TAG_X,
  FONT_PX,
  fnTagRoom,
  groupLines,
  groupSize,
  SMALL_PX,
} from "../../js/src/layout/labels";
import { node, payload } from "./builders";

describe("a function box's fn tag", () => {
  it("never runs under the title, however long the function's name", () => {
    for (const name of ["f", "rotate_half", "transform.postprocess", "create_bidirectional_mask_for_a_long_name"]) {
      const address = `${name}()`;
      const p = payload(
        [node("a_1_1", [`${address}:1`]), node("b_1_2", [`${address}:1`])],
        [],
        [{ address, className: name, parent: "", nPasses: 1, nOps: 2, kind: "function" }],
      );
      const g = [...buildModel(p, "unrolled").groups.values()].find((x) => x.address === address)!;
      const m = DEFAULT_METRICS;
      const [w] = groupSize(g, "unrolled", m);
      const title = groupLines(g, "unrolled")[0];
      const titleLeft = (w - title.length * m.charWidth) / 2; // drawn centred
      const tagRight = FN_TAG_X + (FN_TAG.length * m.charWidth * SMALL_PX) / FONT_PX;
      expect(titleLeft).toBeGreaterThanOrEqual(tagRight + 4);
      expect(fnTagRoom(m)).toBeGreaterThan(tagRight);
    }
  });
});
