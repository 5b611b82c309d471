#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| edge_geo_notify::fuzzing::ip_table(data));
