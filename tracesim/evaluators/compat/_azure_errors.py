"""Azure AI Evaluation's exception and the enums it carries, for the ``compat.azure`` façades.

Names and values are Azure's (``azure.ai.evaluation._exceptions``), so code that inspects
``exc.blame``, ``exc.category`` or ``exc.target`` keeps working; only the members that
tracesim's façades (and Azure's NLP and similarity evaluators) use are defined.

Example:
    >>> error = EvaluationException("F1ScoreEvaluator: no input", blame=ErrorBlame.USER_ERROR)
    >>> str(error), error.category.value
    ('(UserError) F1ScoreEvaluator: no input', 'UNKNOWN')
"""

from __future__ import annotations

import json
from enum import Enum
from typing import Any

__all__ = ["ErrorBlame", "ErrorCategory", "ErrorTarget", "EvaluationException", "unreadable_answer"]


class ErrorBlame(Enum):
    """Who caused the error: the user (bad input or settings) or the system.

    Example:
        >>> ErrorBlame.USER_ERROR.value
        'UserError'
    """

    USER_ERROR = "UserError"
    SYSTEM_ERROR = "SystemError"
    UNKNOWN = "Unknown"


class ErrorCategory(Enum):
    """What kind of error it is (Azure's values, spaces included).

    Example:
        >>> ErrorCategory.INVALID_VALUE.value
        'INVALID VALUE'
    """

    INVALID_VALUE = "INVALID VALUE"
    UNKNOWN_FIELD = "UNKNOWN FIELD"
    MISSING_FIELD = "MISSING FIELD"
    FILE_OR_FOLDER_NOT_FOUND = "FILE OR FOLDER NOT FOUND"
    RESOURCE_NOT_FOUND = "RESOURCE NOT FOUND"
    FAILED_EXECUTION = "FAILED_EXECUTION"
    SERVICE_UNAVAILABLE = "SERVICE UNAVAILABLE"
    MISSING_PACKAGE = "MISSING PACKAGE"
    FAILED_REMOTE_TRACKING = "FAILED REMOTE TRACKING"
    PROJECT_ACCESS_ERROR = "PROJECT ACCESS ERROR"
    UNKNOWN = "UNKNOWN"
    UPLOAD_ERROR = "UPLOAD ERROR"
    NOT_APPLICABLE = "NOT APPLICABLE"


class ErrorTarget(Enum):
    """Where the error arose (the subset of Azure's targets these façades can name).

    Example:
        >>> ErrorTarget.ROUGE_EVALUATOR.value
        'RougeScoreEvaluator'
    """

    EVALUATE = "Evaluate"
    CONVERSATION = "Conversation"
    MODELS = "Models"
    UNKNOWN = "Unknown"
    F1_EVALUATOR = "F1Evaluator"
    ROUGE_EVALUATOR = "RougeScoreEvaluator"
    SIMILARITY_EVALUATOR = "SimilarityEvaluator"


class EvaluationException(Exception):
    """Azure's ``EvaluationException``: a message plus blame, category and target.

    ``args[0]`` is the message, as in Azure; ``str()`` prefixes ``(UserError)`` for user
    errors and ``(InternalError)`` otherwise, and appends the troubleshooting link if any.

    Example:
        >>> try:
        ...     raise EvaluationException(
        ...         "RougeScoreEvaluator: bad threshold",
        ...         blame=ErrorBlame.USER_ERROR,
        ...         category=ErrorCategory.INVALID_VALUE,
        ...         target=ErrorTarget.ROUGE_EVALUATOR,
        ...     )
        ... except EvaluationException as exc:
        ...     print(exc.args[0], "|", exc.blame.value, exc.category.value, exc.target.value)
        RougeScoreEvaluator: bad threshold | UserError INVALID VALUE RougeScoreEvaluator
    """

    def __init__(
        self,
        message: str,
        *args: Any,
        internal_message: str | None = None,
        target: ErrorTarget = ErrorTarget.UNKNOWN,
        category: ErrorCategory = ErrorCategory.UNKNOWN,
        blame: ErrorBlame = ErrorBlame.UNKNOWN,
        tsg_link: str | None = None,
        properties: dict[str, Any] | None = None,
    ) -> None:
        # Exception's own __init__, not super()'s: a subclass may also be an error of another
        # signature (json.JSONDecodeError) that Azure raises in the same place.
        Exception.__init__(self, message, *args)
        self.message = str(message)
        self.internal_message = internal_message
        self.target = target
        self.category = category
        self.blame = blame
        self.tsg_link = tsg_link
        self.properties = properties

    def __str__(self) -> str:
        who = "UserError" if self.blame is ErrorBlame.USER_ERROR else "InternalError"
        text = f"({who}) {self.message}"
        return f"{text}\nVisit {self.tsg_link} to troubleshoot this issue." if self.tsg_link else text


class InvalidTypeError(EvaluationException, TypeError):
    """A value of the wrong type (a threshold, an input): both Azure exceptions at once.

    azure-ai-evaluation 1.17 and before raised ``TypeError`` where 1.18 raises ``EvaluationException``
    (ROUGE thresholds that are not floats); this is both, so either ``except`` catches it.

    Example:
        >>> isinstance(InvalidTypeError("x must be a float"), TypeError)
        True
    """

    def __init__(self, message: str, *, target: ErrorTarget = ErrorTarget.UNKNOWN) -> None:
        super().__init__(
            message, blame=ErrorBlame.USER_ERROR, category=ErrorCategory.INVALID_VALUE, target=target
        )


class UnreadableAnswer(EvaluationException):
    """The judge's answer read by an Azure version's rules gives no result, so that version raises.

    Raised by ``SimilarityEvaluator`` through `unreadable_answer`, which makes it also the
    Python error Azure raises there (``json.JSONDecodeError``, ``TypeError``, ...), so both an
    ``except EvaluationException`` and Azure users' ``except ValueError`` catch it.
    """

    def __init__(self, message: str) -> None:
        super().__init__(
            message,
            target=ErrorTarget.SIMILARITY_EVALUATOR,
            category=ErrorCategory.FAILED_EXECUTION,
            blame=ErrorBlame.SYSTEM_ERROR,
        )


class _NotJSON(UnreadableAnswer, json.JSONDecodeError):
    def __init__(self, message: str, error: json.JSONDecodeError) -> None:
        super().__init__(message)
        self.msg, self.doc, self.pos = error.msg, error.doc, error.pos
        self.lineno, self.colno = error.lineno, error.colno


class _WrongType(UnreadableAnswer, TypeError):
    pass


class _WrongValue(UnreadableAnswer, ValueError):
    pass


class _NoAttribute(UnreadableAnswer, AttributeError):
    pass


class _Overflow(UnreadableAnswer, OverflowError):
    pass


class _TooDeep(UnreadableAnswer, RecursionError):
    pass


_AS: tuple[tuple[type[BaseException], type[UnreadableAnswer]], ...] = (
    (TypeError, _WrongType),
    (ValueError, _WrongValue),
    (AttributeError, _NoAttribute),
    (OverflowError, _Overflow),
    (RecursionError, _TooDeep),
)


def unreadable_answer(message: str, error: BaseException | None = None) -> UnreadableAnswer:
    """An `UnreadableAnswer` that is also ``error``'s kind of Python error (Azure raises that one).

    Example:
        >>> import json
        >>> try:
        ...     json.loads("quite similar")
        ... except ValueError as error:
        ...     raised = unreadable_answer("SimilarityEvaluator: not JSON", error)
        >>> isinstance(raised, json.JSONDecodeError), isinstance(raised, EvaluationException)
        (True, True)
        >>> raised.pos, raised.blame.value
        (0, 'SystemError')
    """
    if isinstance(error, json.JSONDecodeError):
        return _NotJSON(message, error)
    for kind, wrapper in _AS:
        if isinstance(error, kind):
            return wrapper(message)
    return UnreadableAnswer(message)
