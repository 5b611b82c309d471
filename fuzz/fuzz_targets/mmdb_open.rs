#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| egn_tools::fuzzing::mmdb_open(data));
