// `embed_migrations!` reads the migrations at compile time but cannot tell cargo so: without
// this, an edited migration would keep its old text in the binary (diesel_migrations' own
// advice).
fn main() {
    println!("cargo:rerun-if-changed=../../migrations");
}
