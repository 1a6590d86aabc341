'use strict';
const path = require('path');
/* function hidden() {} */
const s = "// not a comment";
function build(opts, cb) {}
module.exports = { build, other: 1 };
exports.extra = () => {};
