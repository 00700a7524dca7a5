fn main() -> std::process::ExitCode {
    voiced::cli::main()
}
