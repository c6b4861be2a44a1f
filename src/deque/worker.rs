//! The owner's [`Worker`] and the thieves' [`Stealer`] (stub).
#![allow(missing_docs, unused)]
use super::{Pointer, Steal};
use core::marker::PhantomData;

pub struct Worker<T: Pointer> {
    _p: PhantomData<T>,
}
pub struct Stealer<T: Pointer> {
    _p: PhantomData<T>,
}
impl<T: Pointer> Worker<T> {
    pub fn new() -> Self {
        todo!()
    }
    pub fn with_capacity(min: usize) -> Self {
        todo!()
    }
    pub fn push(&self, item: T) {
        todo!()
    }
    pub fn pop(&self) -> Option<T> {
        todo!()
    }
    pub fn len(&self) -> usize {
        todo!()
    }
    pub fn is_empty(&self) -> bool {
        todo!()
    }
    pub fn capacity(&self) -> usize {
        todo!()
    }
    pub fn stealer(&self) -> Stealer<T> {
        todo!()
    }
}
impl<T: Pointer> Stealer<T> {
    pub fn steal(&self) -> Steal<T> {
        todo!()
    }
    pub fn steal_half_into(&self, dest: &Worker<T>) -> Steal<T> {
        todo!()
    }
    pub fn len(&self) -> usize {
        todo!()
    }
    pub fn is_empty(&self) -> bool {
        todo!()
    }
}
impl<T: Pointer> Clone for Stealer<T> {
    fn clone(&self) -> Self {
        todo!()
    }
}
