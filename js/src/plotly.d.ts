// plotly.js-cartesian-dist-min ships no types; it is the plotly.js API.
declare module "plotly.js-cartesian-dist-min" {
  import * as P from "plotly.js";
  export default P;
}
