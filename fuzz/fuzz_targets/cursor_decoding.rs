#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| edge_geo_notify::fuzzing::cursor_decoding(data));
