import React, { useState, type FC } from 'react';
import type { Foo } from "./b";
import './side.css';
const fs = require('fs');
const { join, resolve: r } = require("path");
export { x, y as z } from './c';
export * from './d';
export default function App(props: Props) {}
export const useStore = (a, b) => a;
export interface Props { a: string }
export type Id = string;
export enum Color { Red }
// export const commented = 1;
module.exports.legacy = 1;
function helper(one, two) {}
