mod local_pg;

fn main() {}
