"use strict";
// The package's install script: node-gyp-build's (use the prebuild when it loads here, else
// compile), told which libc runs it. node-gyp-build takes a process for musl only where
// /etc/alpine-release exists, so under a musl runtime anywhere else it would try the glibc
// prebuild, fail, and compile; the loader's answer, the running process's own libc, reaches it
// (and the node-gyp-build-test it spawns) as LIBC, which it honours. A LIBC already set wins.
const { libc } = require("./binding.cjs");

const running = libc();
if (running) process.env.LIBC = running;
require("node-gyp-build/bin.js");
