// CSS of the inspector's call and module sections, put beside the widget's own
// (render/styles.ts) by render/styleScope.ts.
export const PANEL_CSS = `
.lens-call{margin:6px 0}
.lens-call-fn{overflow-wrap:anywhere;margin:2px 0}
.lens-call-numbers{margin:2px 0 4px}
.lens-call-args{table-layout:fixed;margin-bottom:2px}
.lens-call-args th{width:92px;overflow:hidden;text-overflow:ellipsis;white-space:nowrap;padding-right:8px}
.lens-call-args td{min-width:0;overflow-wrap:anywhere}
.lens-call-args .lens-link{white-space:normal;overflow-wrap:anywhere;text-align:left;max-width:100%}
.lens-call-value{overflow-wrap:anywhere}
.lens-call-defaults summary{cursor:pointer;font-size:11px}
.lens-module-settings{overflow-wrap:anywhere}
.lens-kind-module{background:#e7f5ff;color:#1c7ed6}
.lens-nonfinite-masked{color:var(--lens-muted)}
.lens-nonfinite-reaches{color:#e03131}
`;
