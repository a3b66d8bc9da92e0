//! Reconcile planning (in progress).
