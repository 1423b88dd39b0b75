//! What several integration tests share.

/// A topology of one 16 GiB RAM disk, `sda`: I/O that costs next to nothing, for tests of
/// what the jobs issue rather than how long it takes.
pub const RAM_DISK_16G: &str = r#"
[[device]]
name = "sda"
model = "ram"
[device.params]
capacity_bytes = 17179869184
"#;
