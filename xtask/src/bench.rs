//! Load benchmark (being written).
pub fn main(_args: &[String]) -> anyhow::Result<()> {
    anyhow::bail!("the benchmark is not written yet")
}
