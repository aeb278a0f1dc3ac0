"""The inspector in headless Chromium; ``helpers`` holds what these tests share."""
