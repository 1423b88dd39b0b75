//! A free-list slab: indices stay valid until removed, and a freed slot is reused first, so
//! the hot paths of the block layer and the volume stack allocate nothing once warm.

/// Simple free-list slab.
#[derive(Debug)]
pub(crate) struct Slab<T> {
    items: Vec<T>,
    free: Vec<u32>,
}

impl<T: Copy> Slab<T> {
    pub(crate) fn new() -> Self {
        Slab { items: Vec::new(), free: Vec::new() }
    }
    #[inline]
    pub(crate) fn insert(&mut self, value: T) -> u32 {
        match self.free.pop() {
            Some(i) => {
                self.items[i as usize] = value;
                i
            }
            None => {
                self.items.push(value);
                (self.items.len() - 1) as u32
            }
        }
    }
    #[inline]
    pub(crate) fn remove(&mut self, i: u32) -> T {
        self.free.push(i);
        self.items[i as usize]
    }
    #[inline]
    pub(crate) fn get_mut(&mut self, i: u32) -> &mut T {
        &mut self.items[i as usize]
    }
    #[inline]
    pub(crate) fn get(&self, i: u32) -> &T {
        &self.items[i as usize]
    }
}
