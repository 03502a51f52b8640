"use strict";
// The one place the compiled addon is loaded. Plain CommonJS because node-gyp-build needs
// a real __dirname, and because Vite cannot transform TypeScript's `export =` loaders.
const path = require("node:path");
module.exports = require("node-gyp-build")(path.join(__dirname, "..", ".."));
