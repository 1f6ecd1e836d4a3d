// The widget's main CSS (the bundle stays a single file); render/styleScope.ts puts it where
// the widget's element lives.
export const WIDGET_CSS = `
.lens-root{--lens-bg:var(--jp-layout-color0,var(--vscode-editor-background,#fff));--lens-fg:var(--jp-ui-font-color0,var(--vscode-foreground,#1f2933));
--lens-muted:var(--jp-ui-font-color2,var(--vscode-descriptionForeground,#7b8794));--lens-border:var(--jp-border-color2,var(--vscode-panel-border,#e4e7eb));
--lens-accent:var(--jp-brand-color1,var(--vscode-focusBorder,#1c7ed6));--lens-panel:var(--jp-layout-color1,var(--vscode-sideBar-background,#fbfcfd));
font-family:var(--jp-ui-font-family,system-ui,-apple-system,"Segoe UI",sans-serif);font-size:12px;color:var(--lens-fg);container:lens/inline-size;min-width:0;
border:1px solid var(--lens-border);border-radius:6px;overflow:hidden;background:var(--lens-bg);display:flex;flex-direction:column;position:relative}
.lens-root.lens-dark{--lens-bg:var(--jp-layout-color0,var(--vscode-editor-background,#1b1e23));--lens-fg:var(--jp-ui-font-color0,var(--vscode-foreground,#e6e9ed));
--lens-muted:var(--jp-ui-font-color2,var(--vscode-descriptionForeground,#8b95a1));--lens-border:var(--jp-border-color2,var(--vscode-panel-border,#3a4048));
--lens-accent:var(--jp-brand-color1,var(--vscode-focusBorder,#4dabf7));--lens-panel:var(--jp-layout-color1,var(--vscode-sideBar-background,#22262b));color-scheme:dark}
.lens-root *{box-sizing:border-box}
.lens-root [hidden]{display:none !important}
.lens-toolbar{display:flex;align-items:center;gap:6px;padding:6px 8px;border-bottom:1px solid var(--lens-border);flex-wrap:wrap;background:var(--lens-panel);min-width:0}
.lens-toolbar>*{flex:none}
/* The title takes what is left first, up to its own width, and is cut with an ellipsis before it
   pushes anything onto a second line; the kernel status fills the rest of the line. */
.lens-toolbar>.lens-title{flex:1000 1 0;min-width:4em;max-width:max-content;overflow:hidden;text-overflow:ellipsis}
.lens-title{font-weight:600;margin-right:6px;white-space:nowrap}
.lens-title small{font-weight:400;color:var(--lens-muted);margin-left:4px}
.lens-toolbar>.lens-title{display:flex;align-items:baseline}
.lens-title-head{min-width:1.5em;overflow:hidden;text-overflow:ellipsis}
.lens-title-tail,.lens-title small{flex:none}
.lens-btn{font:inherit;font-size:12px;padding:3px 9px;border:1px solid var(--lens-border);border-radius:4px;background:var(--lens-bg);color:var(--lens-fg);cursor:pointer;line-height:18px}
.lens-btn:hover:not(:disabled){border-color:var(--lens-accent);color:var(--lens-accent)}
.lens-btn:disabled{opacity:.45;cursor:default}
.lens-btn-primary{background:var(--lens-accent);border-color:var(--lens-accent);color:#fff}
.lens-btn-primary:hover:not(:disabled){color:#fff;filter:brightness(1.1)}
.lens-seg{display:inline-flex;border:1px solid var(--lens-border);border-radius:4px;overflow:hidden}
.lens-seg .lens-btn{border:none;border-radius:0}
.lens-seg .lens-btn[aria-pressed=true]{background:var(--lens-accent);color:#fff}
.lens-check{display:inline-flex;align-items:center;gap:3px;white-space:nowrap;cursor:pointer;user-select:none}
.lens-sep{width:1px;height:18px;background:var(--lens-border);margin:0 2px}
.lens-toolbar>.lens-status{flex:1 1 0;min-width:0;overflow:hidden;text-overflow:ellipsis;text-align:right}
/* Narrow widgets: shorter labels and tighter buttons keep the toolbar on one line. */
@container lens (max-width:1080px){
.lens-toolbar{gap:4px}
.lens-toolbar .lens-sep{display:none}
.lens-toolbar .lens-btn{padding:3px 6px}
.lens-toolbar .lens-long{display:none}
.lens-toolbar .lens-short{display:inline}
}
.lens-status{color:var(--lens-muted);white-space:nowrap;font-size:11px}
.lens-short{display:none}
.lens-toolbar>.lens-search{position:relative;flex:1 1 100px;min-width:90px;max-width:220px}
.lens-search input{font:inherit;font-size:12px;padding:3px 8px;width:100%;border:1px solid var(--lens-border);border-radius:4px;background:var(--lens-bg);color:var(--lens-fg)}
.lens-search input:focus{outline:none;border-color:var(--lens-accent)}
/* Narrower still (600 px): tighter again, so the toolbar stays one line of whole words. */
@container lens (max-width:680px){
.lens-toolbar{gap:3px;padding:5px 6px}
.lens-toolbar .lens-btn{padding:3px 4px}
.lens-toolbar>.lens-title{min-width:3em;margin-right:2px}
.lens-toolbar>.lens-search{min-width:64px}
.lens-check{gap:2px}
}
.lens-results{position:absolute;top:100%;left:0;z-index:20;width:360px;max-width:calc(100cqw - 16px);max-height:320px;overflow:auto;background:var(--lens-bg);border:1px solid var(--lens-border);border-radius:4px;box-shadow:0 6px 18px rgba(0,0,0,.15);margin-top:2px}
.lens-result{display:flex;flex-wrap:wrap;gap:0 8px;justify-content:space-between;padding:4px 8px;cursor:pointer}
.lens-result .lens-muted{min-width:0;margin-left:auto;text-align:right;overflow-wrap:anywhere}
.lens-result[aria-selected=true],.lens-result:hover{background:rgba(28,126,214,.12)}
.lens-result .lens-mono{min-width:0;overflow-wrap:anywhere}
.lens-banner{padding:6px 10px;background:rgba(224,49,49,.1);color:#e03131;border-bottom:1px solid rgba(224,49,49,.35);font-size:12px}
.lens-banner b{font-weight:600}
.lens-ablation-banner{background:rgba(34,139,230,.1);color:var(--lens-fg);border-bottom-color:rgba(34,139,230,.35);display:flex;align-items:center;gap:6px;flex-wrap:wrap}
.lens-view-hint{background:rgba(34,139,230,.1);color:var(--lens-fg);border-bottom-color:rgba(34,139,230,.35)}
.lens-main{display:flex;min-height:0;position:relative}
.lens-resize{height:7px;cursor:ns-resize;touch-action:none;border-top:1px solid var(--lens-border);background:var(--lens-panel);position:relative}
.lens-resize::after{content:"";position:absolute;left:50%;top:2px;width:36px;margin-left:-18px;height:2px;border-radius:1px;background:var(--lens-muted);opacity:.5}
.lens-resize:hover::after,.lens-resize.lens-resizing::after,.lens-resize:focus-visible::after{background:var(--lens-accent);opacity:1}
.lens-resize:focus{outline:none}
.lens-graph-col{flex:1;min-width:0;display:flex;flex-direction:column}
.lens-canvas-wrap{flex:1;position:relative;min-width:0;min-height:0;overflow:hidden}
.lens-footer{flex:none;display:flex;flex-wrap:wrap;justify-content:space-between;align-items:center;gap:2px 12px;padding:3px 10px;border-top:1px solid var(--lens-border);background:var(--lens-panel)}
.lens-canvas-wrap canvas{display:block;touch-action:none;cursor:grab}
.lens-canvas-wrap canvas.lens-dragging{cursor:grabbing}
.lens-canvas-wrap canvas.lens-pointer{cursor:pointer}
.lens-canvas-wrap canvas.lens-minimap{position:absolute;right:8px;bottom:8px;border:1px solid var(--lens-border);border-radius:4px;box-shadow:0 2px 8px rgba(0,0,0,.12);cursor:move}
.lens-overlay{color:var(--lens-muted);font-size:11px;white-space:nowrap}
.lens-canvas-wrap canvas:focus{outline:none}
.lens-canvas-wrap.lens-engaged::after{content:"";position:absolute;inset:0;border:1px solid var(--lens-accent);pointer-events:none}
.lens-wheel-hint{position:absolute;left:50%;top:50%;transform:translate(-50%,-50%);padding:6px 12px;border-radius:4px;background:rgba(20,24,28,.78);color:#fff;font-size:12px;pointer-events:none;white-space:nowrap}
.lens-busy{position:absolute;right:10px;top:8px;font-size:11px;color:var(--lens-muted);background:var(--lens-bg);padding:2px 8px;border-radius:3px;border:1px solid var(--lens-border)}
.lens-legend{display:flex;flex-wrap:wrap;gap:2px 10px;font-size:11px;color:var(--lens-muted)}
.lens-legend span{white-space:nowrap}
.lens-legend i{display:inline-block;width:10px;height:10px;border-radius:3px;margin-right:3px;vertical-align:-1px;border:1px solid}
.lens-monitor-body{display:flex;gap:8px;border-top:1px solid var(--lens-border);background:var(--lens-panel);max-height:460px}
.lens-monitor-list{width:min(320px,40%);flex:none;overflow-y:auto;padding:6px 8px;border-right:1px solid var(--lens-border)}
.lens-monitor-plots{flex:1 1 0;min-width:0;overflow-y:auto;padding:6px 8px}
.lens-monitor-title{font-weight:600;margin:2px 0 4px}
.lens-monitor-ranked{margin:0;padding-left:22px}
.lens-monitor-ranked li{margin:1px 0;white-space:nowrap;overflow:hidden;text-overflow:ellipsis}
.lens-monitor-bad button{color:#e03131}
.lens-linkish{font:inherit;border:none;background:none;padding:0;color:var(--lens-accent);cursor:pointer;text-decoration:underline}
.lens-muted{color:var(--lens-muted)}
.lens-monitor-slider{width:180px}
.lens-inspector{width:min(400px,48%);flex:none;border-left:1px solid var(--lens-border);overflow-y:auto;overflow-x:hidden;scrollbar-gutter:stable;background:var(--lens-panel)}
.lens-inspector-body{padding:10px 12px}
.lens-insp-head{display:flex;justify-content:space-between;align-items:center;min-width:0}
.lens-insp-title{display:flex;gap:6px;align-items:center;min-width:0}
.lens-insp-func{font-weight:700;font-size:14px;font-family:var(--jp-code-font-family,ui-monospace,monospace);overflow:hidden;text-overflow:ellipsis}
.lens-insp-id{font-family:var(--jp-code-font-family,ui-monospace,monospace);color:var(--lens-muted);margin:2px 0 8px;word-break:break-all}
.lens-icon-btn{border:none;background:none;font-size:18px;cursor:pointer;color:var(--lens-muted);line-height:1;padding:0 4px}
.lens-icon-btn:hover{color:var(--lens-fg)}
.lens-kind{font-size:10px;text-transform:uppercase;letter-spacing:.04em;padding:1px 5px;border-radius:3px;background:rgba(128,128,128,.15);color:var(--lens-muted)}
.lens-kind-input{background:#d3f9d8;color:#2b8a3e}.lens-kind-output{background:#ffe8cc;color:#d9480f}
.lens-facts{border-collapse:collapse;width:100%;margin-bottom:8px;table-layout:fixed}
.lens-facts th{text-align:left;font-weight:500;color:var(--lens-muted);padding:2px 8px 2px 0;vertical-align:top;width:64px}
.lens-facts td{padding:2px 0;font-family:var(--jp-code-font-family,ui-monospace,monospace);overflow-wrap:anywhere}
.lens-param{overflow-wrap:anywhere}
.lens-mono{font-family:var(--jp-code-font-family,ui-monospace,monospace)}
.lens-muted{color:var(--lens-muted)}
.lens-links{margin:4px 0;display:flex;flex-wrap:wrap;gap:4px;align-items:center}
.lens-links-label{color:var(--lens-muted);margin-right:2px;min-width:64px}
.lens-link{max-width:100%;overflow:hidden;text-overflow:ellipsis;white-space:nowrap;font:inherit;font-family:var(--jp-code-font-family,ui-monospace,monospace);font-size:11px;border:1px solid var(--lens-border);background:var(--lens-bg);color:var(--lens-accent);border-radius:10px;padding:0 7px;cursor:pointer}
.lens-link:hover{border-color:var(--lens-accent)}
.lens-source{margin:8px 0;overflow-wrap:anywhere}
.lens-code{margin:3px 0 0;padding:5px 7px;background:rgba(128,128,128,.08);border-radius:4px;white-space:pre-wrap;word-break:break-all;font-size:11px}
.lens-act{border-top:1px solid var(--lens-border);margin-top:10px;padding-top:8px}
.lens-section-title{font-weight:600;text-transform:uppercase;font-size:10px;letter-spacing:.06em;color:var(--lens-muted);display:flex;justify-content:space-between;align-items:center;gap:6px;margin-bottom:4px;min-width:0}
.lens-select{font:inherit;font-size:11px;padding:1px 4px;border:1px solid var(--lens-border);border-radius:4px;background:var(--lens-bg);color:var(--lens-fg);text-transform:none;letter-spacing:0;max-width:100%;min-width:0}
.lens-act-status:empty{display:none}
.lens-act-status{padding:4px 0;color:var(--lens-muted)}
.lens-act-error{color:#e03131}.lens-act-slow{color:#e67700}.lens-act-unsaved,.lens-act-unavailable{color:var(--lens-fg);font-weight:500}
.lens-act-controls{display:flex;flex-wrap:wrap;gap:8px;align-items:center;margin:2px 0 4px}
.lens-act-controls:empty{display:none}
.lens-slider{display:inline-flex;gap:6px;align-items:center;max-width:100%}
.lens-slider span{white-space:nowrap}
.lens-slider input{width:120px;min-width:50px;flex:0 1 120px}
.lens-chan{display:inline-flex;gap:4px;align-items:center}
.lens-chan .lens-btn{padding:0 6px}
.lens-note{color:#e67700;font-size:11px;overflow-wrap:anywhere}
.lens-plot{min-width:0;max-width:100%;overflow:hidden}
.lens-note:empty{display:none}
.lens-no-values{color:var(--lens-muted)}
.lens-swatch{display:inline-block;width:9px;height:9px;border-radius:2px;margin-right:4px;vertical-align:-1px}
.lens-empty{color:var(--lens-muted);padding:12px 0}
.lens-scalar{font-size:28px;font-family:var(--jp-code-font-family,ui-monospace,monospace);padding:16px 0;text-align:center}
.lens-stats-table{width:100%;border-collapse:collapse;margin-top:4px}
.lens-stats-table td{padding:3px 4px;border:1px solid var(--lens-border);text-align:center}
.lens-stat-k{font-size:10px;color:var(--lens-muted)}
.lens-stat-v{font-family:var(--jp-code-font-family,ui-monospace,monospace)}
.lens-bad{color:#e03131;font-weight:700}
.lens-value-switch{display:inline-flex;gap:4px;align-items:center;text-transform:none;letter-spacing:0;font-weight:400}
.lens-value-switch .lens-btn{padding:0 7px;font-size:11px;line-height:17px}
.lens-grad-panel{width:min(300px,36%)}
.lens-leaf{padding:2px 0;display:flex;flex-wrap:wrap;align-items:baseline;gap:2px;min-width:0}
.lens-leaf .lens-link{white-space:normal;overflow-wrap:anywhere;text-align:left;border-radius:8px}
.lens-leaf-starved{background:rgba(247,103,7,.12);border-left:3px solid #f76707;padding-left:4px}
.lens-bw-list{margin:0;padding-left:2.6em;font-size:11px}
.lens-bw-node{padding:1px 0;overflow-wrap:anywhere}
.lens-btn-warn{border-color:#f76707;color:#d9480f}
`;
