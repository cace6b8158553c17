import pytest

from view.view_sessions import seed_session


@pytest.fixture
def seed():
    """The worked example of the seed explainer, section 14, in memory."""
    return seed_session()
