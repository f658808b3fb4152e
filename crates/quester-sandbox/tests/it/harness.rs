//! How run_tests splits and reports: errors of the program as a whole, context statements,
//! odd test sources.

use crate::common::sandbox;
use quester_sandbox::Termination;

const CHECK3: &str = "def check(candidate):\n    assert candidate(1) == 1\n    assert candidate(2) == 2\n    assert candidate(3) == 3\n";

#[test]
fn whole_program_errors_are_short_and_readable() {
    let sb = sandbox();
    let cases = [
        ("def f(x):\n    return x +\n", CHECK3, "f", "the submission does not compile: SyntaxError: invalid syntax (line 2)"),
        ("def g(x):\n    return x\n", CHECK3, "f", "entry point `f` is not defined"),
        ("f = 3\n", CHECK3, "f", "entry point `f` is not callable"),
        ("def f(x):\n    return x\n", "def check(candidate):\n    assert candidate(1) ==\n", "f", "the test source does not parse: SyntaxError: invalid syntax (line 2)"),
        ("def f(x):\n    return x\n", "assert True\n", "f", "the test source defines no check() function"),
        ("def f(x):\n    return x\n", "def check(candidate):\n    candidate(1)\n", "f", "no tests found in check()"),
        ("def f(x):\n    return x\n", "import nosuchmodule\ndef check(candidate):\n    assert candidate(1) == 1\n", "f", "the test source raised ModuleNotFoundError: No module named 'nosuchmodule' outside check()"),
        ("def f(x):\n    return x\0\n", CHECK3, "f", "the submission does not compile: "),
        ("raise ValueError('boom')\n", CHECK3, "f", "the submission raised ValueError: boom while loading"),
    ];
    for (setup, tests, entry, expected) in cases {
        let report = sb.run_tests(setup, tests, entry).expect("run_tests");
        let error = report.error.clone().unwrap_or_default();
        assert!(
            error.starts_with(expected),
            "{setup:?} / {tests:?}: {error:?}"
        );
        assert!(!report.all_passed());
        assert_eq!(report.execution.termination, Termination::Exited(0));
        assert_eq!(report.passed.len() + report.failures.len(), report.total);
    }
}

#[test]
fn context_statements_run_in_order_and_their_failures_are_reported() {
    let sb = sandbox();
    let tests = "import math\n\
        HELPER = 10\n\
        def check(candidate):\n    \
            import math\n    \
            base = candidate(HELPER)\n    \
            assert base == 10\n    \
            for i in range(3):\n        \
                assert candidate(i) == i\n    \
            missing = undefined_name\n    \
            assert math.sqrt(candidate(4)) == 2\n    \
            def helper():\n        \
                assert False\n    \
            assert candidate(-1) == -1, 'negative'\n";
    let report = sb
        .run_tests("def f(x):\n    return x if x >= 0 else 0\n", tests, "f")
        .expect("run_tests");
    assert_eq!(report.total, 4, "{report:?}");
    assert_eq!(report.passed, vec![0, 1, 2]);
    assert_eq!(report.failures.len(), 1);
    assert_eq!(report.failures[0].message, "AssertionError: negative");
    assert_eq!(
        report.failures[0].source,
        "assert candidate(-1) == -1, 'negative'"
    );
    let error = report.error.as_deref().unwrap_or("");
    assert!(
        error.contains("line 9 of check() (`missing = undefined_name`) raised NameError"),
        "{error}"
    );
}

#[test]
fn crlf_sources_and_unicode_give_exact_segments() {
    let sb = sandbox();
    let tests = "def check(candidate):\r\n    assert candidate('é') == 'ü'\r\n    for x in 'ab':\r\n        assert candidate(x) == x + '!'\r\n";
    let report = sb
        .run_tests("def f(s):\n    return s\n", tests, "f")
        .expect("run_tests");
    assert_eq!(report.total, 2);
    assert_eq!(report.failures[0].source, "assert candidate('é') == 'ü'");
    assert_eq!(
        report.failures[1].source,
        "for x in 'ab':\r\n        assert candidate(x) == x + '!'"
    );
}

#[test]
fn the_submission_cannot_redefine_builtins_for_the_tests() {
    let sb = sandbox();
    let setup = "import builtins\nbuiltins.len = lambda x: 3\ndef f(x):\n    return [0] * x\n";
    let tests = "def check(candidate):\n    assert len(candidate(2)) == 2\n";
    let report = sb.run_tests(setup, tests, "f").expect("run_tests");
    assert!(report.all_passed(), "{report:?}");
}

#[test]
fn run_python_reports_exit_codes_and_tracebacks() {
    let sb = sandbox();
    let e = sb.run_python("import sys\nsys.exit(3)\n", b"").unwrap();
    assert_eq!(e.termination, Termination::Exited(3));
    let e = sb.run_python("x = 1\nraise KeyError('k')\n", b"").unwrap();
    assert_eq!(e.termination, Termination::Exited(1));
    assert!(
        e.stderr.contains("File \"main.py\", line 2"),
        "{}",
        e.stderr
    );
    assert!(e.stderr.contains("raise KeyError('k')"), "{}", e.stderr);
    assert!(
        e.stderr.trim_end().ends_with("KeyError: 'k'"),
        "{}",
        e.stderr
    );
    let e = sb.run_python("print(__name__)\n", b"").unwrap();
    assert_eq!(e.stdout, "__main__\n");
    let e = sb.run_python("def f(:\n", b"").unwrap();
    assert_eq!(e.termination, Termination::Exited(1));
    assert!(e.stderr.contains("SyntaxError"));
}
