"use strict";
// The one place the compiled addon is loaded. Plain CommonJS because node-gyp-build needs
// a real __dirname, and because Vite cannot transform TypeScript's `export =` loaders.
const path = require("node:path");
const root = path.join(__dirname, "..", "..");
module.exports = require("node-gyp-build")(root);
// Where the addon was found from; the SQLite extension built beside it is looked up here too.
// Set here because this file keeps its real location also when the TypeScript is bundled.
module.exports.packageRoot = root;
