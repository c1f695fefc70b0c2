//! What a caller of the run sees of it while it runs: the staged work root
//! and each turn boundary (record's snapshots, rerun's restore before turn N).

use super::stage::Staged;

/// A run that wants to see its work root and each turn boundary (record's
/// `Snapshotter`, rerun's restore before turn N), through a shared
/// reference (a `RefCell` of a [`HookMut`] is one).
pub trait RunHook {
    /// The work root is staged; nothing has run yet.
    fn staged(&self, staged: &Staged);
    /// Turn `index` (0-based) ended; the next is not sent until this returns.
    fn turn_ended(&self, index: usize);
}

/// [`RunHook`] for a value that changes as it is told.
pub trait HookMut {
    fn staged(&mut self, staged: &Staged);
    fn turn_ended(&mut self, index: usize);
}

impl<T: HookMut> RunHook for std::cell::RefCell<T> {
    fn staged(&self, staged: &Staged) {
        self.borrow_mut().staged(staged);
    }

    fn turn_ended(&self, index: usize) {
        self.borrow_mut().turn_ended(index);
    }
}
