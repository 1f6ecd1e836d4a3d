import { describe, expect, it } from "vitest";
import { buildModel } from "../../js/src/graph/tree";
import { unwrapped, wrapperPrefix } from "../../js/src/graph/wrapperPrefix";
import { clipMiddle, groupLines } from "../../js/src/layout/labels";
import { hoverText } from "../../js/src/render/hoverText";
import { node, payload } from "./builders";

// PEFT's LoRA Llama: PeftModelForCausalLM > (LoraModel, see-through) > LlamaForCausalLM.
const PEFT = "base_model.model.";
const ATTN = `${PEFT}model.layers.0.self_attn`;

function peftPayload() {
  const groups = (...addresses: string[]): string[] => addresses.map((a) => `${a}:1`);
  const chain = [`${PEFT}model`, `${PEFT}model.layers.0`, ATTN];
  return payload(
    [
      node("embedding_1_1", groups("base_model.model", `${PEFT}model`, `${PEFT}model.embed_tokens`)),
      node("linear_1_2", groups("base_model.model", ...chain, `${ATTN}.q_proj`)),
      node("linear_1_3", groups("base_model.model", ...chain, `${ATTN}.k_proj`)),
      node("linear_1_4", groups("base_model.model", `${PEFT}lm_head`)),
    ],
    [],
  );
}

describe("wrapped models: addresses without the wrapper's prefix", () => {
  it("finds PEFT's, DDP's and torch.compile's prefix, and none where nothing wraps", () => {
    expect(wrapperPrefix(["", "base_model.model", ATTN, `${PEFT}lm_head`])).toBe(PEFT);
    expect(wrapperPrefix(["", "module", "module.encoder", "module.head"])).toBe("module.");
    expect(wrapperPrefix(["", "_orig_mod.fc1", "_orig_mod.fc2"])).toBe("_orig_mod.");
    expect(wrapperPrefix(["", "transformer", "transformer.h.0", "lm_head"])).toBe("");
    // a Sequential's numbered block tells blocks apart: it wraps nothing
    expect(wrapperPrefix(["", "0", "0.0", "0.1"])).toBe("");
    expect(wrapperPrefix(["", "encoder.0.fc", "encoder.1.fc"])).toBe("encoder.");
    expect(unwrapped(ATTN, PEFT)).toBe("model.layers.0.self_attn");
    expect(unwrapped("base_model.model", PEFT)).toBe("base_model.model"); // the wrapper itself
  });

  it("the box says model.layers.0.self_attn, not a middle cut that loses layers.0", () => {
    const model = buildModel(peftPayload(), "unrolled");
    const attn = model.groups.get(`${ATTN}:1`)!;
    expect(groupLines(attn, "unrolled")[1]).toBe("model.layers.0.self_attn");
    expect(groupLines(model.groups.get(`${ATTN}.q_proj:1`)!, "unrolled")[1]).toBe("model.layers.0.self_attn.q_proj");
    // the tooltip keeps the whole address
    expect(hoverText(model, { type: "item", id: `@${ATTN}:1` })).toContain(ATTN);
  });

  it("a long address keeps its numbered block whole when cut", () => {
    for (const address of [ATTN, "transformer.h.10.attn.c_proj.something_long", `${ATTN}.rotary_emb`]) {
      const cut = clipMiddle(address);
      expect(cut.length).toBeLessThanOrEqual(34);
      const block = /(\w+\.\d+)\./.exec(address)![1];
      expect(cut, cut).toContain(block);
    }
  });
});
