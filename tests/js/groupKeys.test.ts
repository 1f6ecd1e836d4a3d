// The group-key grammar, read from the fixture the Python tests read too
// (tests/python/test_contract_tables.py): both sides must build every key alike.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { chunkRange } from "../../js/src/graph/chunks";
import { outputKind, stackKey } from "../../js/src/graph/folds";

interface Fixture {
  stacks: { blocks: string[]; key: string }[];
  outputs: { id: string; kind: string | null }[];
  chunks: { box: string; lo: number; hi: number; key: string }[];
}

const bytes = readFileSync(new URL("./fixtures/group_keys.json", import.meta.url));
const fixture = JSON.parse(new TextDecoder().decode(bytes)) as Fixture;

describe("group keys (tests/js/fixtures/group_keys.json)", () => {
  it("reads a fixture with cases of every kind", () => {
    expect(fixture.stacks.length).toBeGreaterThan(1);
    expect(fixture.outputs.length).toBeGreaterThan(1);
    expect(fixture.chunks.length).toBeGreaterThan(1);
  });
  it.each(fixture.stacks)("stack of $blocks.0 -> $key", ({ blocks, key }) => {
    expect(stackKey(blocks)).toBe(key);
  });
  it.each(fixture.outputs)("output $id -> $kind", ({ id, kind }) => {
    expect(outputKind(id)).toBe(kind);
  });
  it.each(fixture.chunks)("chunk $lo-$hi of '$box' -> $key", ({ box, lo, hi, key }) => {
    expect(box + chunkRange(lo, hi)).toBe(key);
  });
});
