// How the side panels (the inspector, the backward panel) share the width with the graph: the
// graph keeps at least half of it, the panels shrinking to share the rest; on a narrow widget
// the backward panel lies over the graph's left side instead of squeezing it further. Also the
// bar under each leaf of the backward panel: its gradient norm on a log scale.
export const PANEL_LAYOUT_CSS = `
.lens-main>.lens-graph-col{min-width:50%}
.lens-main>.lens-inspector{flex:0 1 auto;min-width:0}
@container lens (max-width:720px){
.lens-main>.lens-grad-panel{position:absolute;top:0;bottom:0;left:0;z-index:15;width:min(300px,60%);border-left:0;border-right:1px solid var(--lens-border);box-shadow:6px 0 18px rgba(0,0,0,.18)}
}
.lens-leaf-bar{flex:1 0 100%;height:3px;border-radius:2px;background:var(--lens-border)}
.lens-leaf-bar i{display:block;height:100%;border-radius:2px;background:var(--lens-accent)}
`;
