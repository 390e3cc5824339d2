//! Any bytes as a host config: loading never panics; a config that loads serializes back
//! to JSON that loads again to the same config.
#![no_main]

use brain_tools_config::HostConfig;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(loaded) = HostConfig::from_json_bytes_with_env(data, |name| name.len() % 2 == 0) {
        let back = serde_json::to_vec(&loaded.config).expect("a loaded config serializes");
        let again = HostConfig::from_json_bytes_with_env(&back, |name| name.len() % 2 == 0)
            .expect("a serialized config loads");
        assert_eq!(again.config, loaded.config);
    }
});
