import type { ReactNode } from 'react';
export declare const enum Mode { A, B }
export abstract class Base<T> {}
type Local<T> = { value: T };
export default class extends Base<number> {}
export const Comp: FC<Props> = ({ children }) => children;
