use std::collections::{HashMap, HashSet};
pub use crate::inner::Thing;
mod inner;
pub fn run(a: i32, b: &str) -> i32 { 0 }
fn private() {}
pub struct S;
pub(crate) enum E { A }
pub trait T {}
