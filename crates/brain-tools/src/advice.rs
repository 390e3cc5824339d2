//! What a failed call's message says after what happened, for the model that reads it:
//! whether the tool may have run (from `delivery`: a retry may repeat it) and whether
//! another try may succeed (`retryable`), two questions a model must not confuse: a
//! wrong tool name did not run, so a retry is safe, and useless. Pure, so it is tested
//! as a table; `ToolHost` appends it to every message it builds.

use brain_tools_events::{Delivery, ErrorKind};

/// The clause that ends a message (after `; `): what the failure means for calling the
/// tool again.
pub(crate) fn advice(kind: ErrorKind, delivery: Delivery, retryable: bool) -> &'static str {
    match (kind, delivery, retryable) {
        (ErrorKind::UnknownTool, ..) => "no tool ran, and calling it again fails the same way",
        (ErrorKind::InvalidArguments, ..) => {
            "it did not run; call it again only with arguments that fix this"
        }
        (ErrorKind::MissingToken, ..) => {
            "it did not run, and calling it again fails the same way until the variable is set"
        }
        (ErrorKind::AuthorizationRequired, ..) => {
            "it did not run, and calling it again fails the same way until the tenant authorizes"
        }
        (ErrorKind::OutputTooLarge, Delivery::NotSent, _) => {
            "it did not run; ask for less, since the same call returns as much again"
        }
        (ErrorKind::OutputTooLarge, Delivery::Unknown, _) => {
            "it may have run, so check before calling it again, and ask for less: the same call \
             returns as much again"
        }
        (ErrorKind::OutputTooLarge, ..) => {
            "the server took the call, so calling it again may repeat what it did; ask for \
             less: the same call returns as much again"
        }
        (ErrorKind::ToolError, ..) => {
            "the server took the call, so calling it again may repeat what it did; what it said \
             tells whether another try can succeed"
        }
        (_, Delivery::NotSent, false) => {
            "it did not run, and calling it again the same way fails the same way"
        }
        (_, Delivery::NotSent, true) => {
            "it did not run, so calling it again is safe and may succeed"
        }
        (_, Delivery::Unknown, true) => {
            "it may have run, so check before calling it again; another try may succeed"
        }
        (_, Delivery::Unknown, false) => {
            "it may have run, so check before calling it again; the same call fails the same way"
        }
        (_, _, true) => {
            "the server took the call, so calling it again may repeat what it did; another try \
             may succeed"
        }
        (_, _, false) => "the server took the call, and the same call fails the same way",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each message tells apart "a retry cannot repeat anything" from "a retry may
    /// succeed": never "safe" without saying whether it can help.
    #[test]
    fn the_advice_says_both_whether_it_ran_and_whether_a_retry_may_help() {
        use Delivery::{Delivered, NotSent, Unknown};
        // (kind, delivery, retryable, a phrase the advice holds)
        let cases = [
            (ErrorKind::UnknownTool, NotSent, false, "fails the same way"),
            (
                ErrorKind::InvalidArguments,
                NotSent,
                false,
                "arguments that fix",
            ),
            (
                ErrorKind::MissingToken,
                NotSent,
                false,
                "until the variable is set",
            ),
            (ErrorKind::Connect, NotSent, false, "fails the same way"),
            (ErrorKind::Connect, NotSent, true, "is safe and may succeed"),
            (ErrorKind::HttpStatus, NotSent, false, "fails the same way"),
            (ErrorKind::Protocol, Unknown, true, "check before"),
            (
                ErrorKind::Protocol,
                Delivered,
                false,
                "took the call, and the same call fails",
            ),
            (
                ErrorKind::Protocol,
                Delivered,
                true,
                "may repeat what it did",
            ),
            (
                ErrorKind::ServerExited,
                Unknown,
                true,
                "another try may succeed",
            ),
            (
                ErrorKind::Timeout,
                Unknown,
                true,
                "check before calling it again",
            ),
            (ErrorKind::Timeout, NotSent, true, "is safe and may succeed"),
            (ErrorKind::Cancelled, Unknown, true, "check before"),
            (ErrorKind::OutputTooLarge, Unknown, false, "ask for less"),
            (ErrorKind::OutputTooLarge, Delivered, false, "ask for less"),
            (ErrorKind::ToolError, Delivered, false, "what it said"),
            (
                ErrorKind::OutputSchema,
                Delivered,
                false,
                "fails the same way",
            ),
            (ErrorKind::Executor, NotSent, false, "fails the same way"),
            (
                ErrorKind::AuthorizationRequired,
                NotSent,
                false,
                "until the tenant authorizes",
            ),
            (ErrorKind::AuthorizationFailed, NotSent, true, "may succeed"),
            (
                ErrorKind::CredentialStore,
                NotSent,
                false,
                "fails the same way",
            ),
        ];
        for (kind, delivery, retryable, phrase) in cases {
            let advice = advice(kind, delivery, retryable);
            assert!(
                advice.contains(phrase),
                "{kind} {delivery} {retryable}: {advice}"
            );
            // What a model must not read: "safe" where nothing says whether it helps.
            assert!(
                !advice.contains("safe") || advice.contains("may succeed"),
                "{kind}: {advice}"
            );
            let ran =
                advice.starts_with("it may have run") || advice.starts_with("the server took");
            assert_eq!(ran, delivery != NotSent, "{kind} {delivery}: {advice}");
        }
    }
}
