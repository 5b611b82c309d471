//! The core's IP table lookup (`egn_core::ip::table`) compiled on its own: exports for a wasm
//! host (`run.mjs`) and a library for the native examples. It depends on the core crate, so it
//! runs exactly the worker's lookup code (no copies of its files or types).

pub use egn_core::ip::{table, workload};

use std::cell::RefCell;
use table::IpTable;

thread_local! {
    static TABLE: RefCell<Option<IpTable<Vec<u8>>>> = const { RefCell::new(None) };
    static IPS: RefCell<Vec<std::net::IpAddr>> = const { RefCell::new(Vec::new()) };
}

/// A buffer of `n` bytes for the host to fill (ownership passes back with `open` / `page`).
#[no_mangle]
pub extern "C" fn alloc(n: usize) -> *mut u8 {
    let mut v = vec![0u8; n];
    let p = v.as_mut_ptr();
    std::mem::forget(v);
    p
}

/// # Safety
/// `p` came from `alloc(n)` and is not used by the host afterwards.
unsafe fn take(p: *mut u8, n: usize) -> Vec<u8> {
    Vec::from_raw_parts(p, n, n)
}

/// Opens the directory in `alloc(n)`'s buffer; its page count, or -1.
///
/// # Safety
/// As [`take`].
#[no_mangle]
pub unsafe extern "C" fn open(p: *mut u8, n: usize) -> i32 {
    match IpTable::from_bytes(take(p, n)) {
        Ok(t) => {
            let pages = t.page_count() as i32;
            TABLE.with(|s| *s.borrow_mut() = Some(t));
            pages
        }
        Err(_) => -1,
    }
}

/// Adds page `i` from `alloc(n)`'s buffer; 1 when it is accepted.
///
/// # Safety
/// As [`take`].
#[no_mangle]
pub unsafe extern "C" fn page(i: usize, p: *mut u8, n: usize) -> i32 {
    TABLE.with(|s| {
        let s = s.borrow();
        let t = s.as_ref().expect("open first");
        i32::from(t.insert_page(i, take(p, n)).is_ok())
    })
}

/// Makes the benchmark's `n` addresses (`workload::addresses`); `family` 4 or 6 keeps only the
/// addresses of that family (still `n` of them), 0 keeps the mix.
#[no_mangle]
pub extern "C" fn gen(n: usize, family: u32) {
    IPS.with(|v| *v.borrow_mut() = addresses(n, family));
}

/// `n` addresses of `workload::addresses`, of one family or both (see [`gen`]).
pub fn addresses(n: usize, family: u32) -> Vec<std::net::IpAddr> {
    let mut a = workload::addresses(if family == 0 { n } else { n * 4 });
    a.retain(|ip| family == 0 || (family == 4) == ip.is_ipv4());
    a.truncate(n);
    a
}

/// `reps` passes of `workload::count_countries`; the summed count.
#[no_mangle]
pub extern "C" fn run(reps: usize) -> usize {
    TABLE.with(|t| {
        IPS.with(|v| {
            let (t, v) = (t.borrow(), v.borrow());
            let t = t.as_ref().expect("open first");
            (0..reps).map(|_| workload::count_countries(t, &v)).sum()
        })
    })
}
