// The oracle for CommonJS exports: prints {file: Object.keys(require(file))}
// for each file named, with every package outside the tree replaced by a
// stub that absorbs any use, so only the files' own exports are measured.
const Module = require('module');
const path = require('path');
const stub = new Proxy(function () {}, {
  get: (_, key) => (key === Symbol.toPrimitive ? () => '' : key === 'prototype' ? {} : stub),
  apply: () => stub,
  construct: () => stub,
});
const load = Module._load;
Module._load = function (request) {
  if (request.startsWith('.') || request.startsWith('/') || Module.isBuiltin(request)) {
    return load.apply(this, arguments);
  }
  return stub;
};
const keys = {};
for (const file of process.argv.slice(2)) {
  keys[file] = Object.keys(require(path.resolve(file)));
}
console.log(JSON.stringify(keys));
