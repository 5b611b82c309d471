// The console's entry point (bundled by esbuild into /www/app.js; the page has no inline script).

import { initGeo } from "./geo.js";
import { initInbox } from "./inbox.js";
import { initSimulate } from "./simulate.js";

initInbox();
initSimulate();
initGeo();
