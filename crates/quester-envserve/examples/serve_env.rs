//! `quester env serve ENV --addr ADDR` without the CLI: the same server, built with only
//! quester-envs beneath it, so bench/envserve.sh can have a release build quickly.
//!
//! Usage: serve_env ENV ADDR

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [env, addr] = args.as_slice() else {
        eprintln!("usage: serve_env ENV ADDR");
        return std::process::ExitCode::from(2);
    };
    let config = quester_envserve::ServerConfig::new(env, toml::Table::new());
    match quester_envserve::serve_until_signal(config, addr) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("serve_env: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
