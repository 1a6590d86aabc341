export * as ns from './ns.js';
export { default as Button, type Props } from './button.js';
export async function* gen() {}
const local = 1;
export { local as renamed };
