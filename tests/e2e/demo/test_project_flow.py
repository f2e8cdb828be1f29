"""A designer's whole path in the browser: create a project, import a CSV, retrain, see the new
version, try a prediction with its evidence, and download the model bundle."""

from __future__ import annotations

import zipfile

import pytest

from tests.e2e.conftest import shot
from tests.e2e.demo.conftest import started_job, wait_for_job

pytestmark = [pytest.mark.e2e, pytest.mark.slow]

CSV = """text,label,split
where is my parcel,track,train
has my order shipped yet,track,train
tracking number please,track,train
I want my money back,refund,train
refund my order,refund,train
how do I get a refund,refund,train
reset my password,login,train
I cannot log in,login,train
forgot my password again,login,train
is my package on the way,track,test
please refund me,refund,test
login is broken,login,test
"""


def test_create_import_retrain_try_and_export(server, page, tmp_path):
    page.goto(server.url)
    page.get_by_label("New project").fill("Flow shop")
    page.get_by_label("New project").press("Enter")
    page.wait_for_function(
        "() => document.querySelector('#project-summary')?.innerText?.includes('Flow shop')"
    )
    src = tmp_path / "shop.csv"
    src.write_text(CSV, encoding="utf-8")
    page.get_by_role("tab", name="Data").click()
    page.get_by_text("Import / export").click()
    page.locator("#import-file input[type=file]").set_input_files(str(src))
    page.locator("#import").click()
    page.wait_for_function(
        "() => document.querySelector('#import-status')?.innerText?.includes('Imported 12')"
    )
    page.wait_for_timeout(5000)  # the table's refresh never writes over the import's message
    assert "Imported 12" in page.locator("#import-status").inner_text()
    page.wait_for_function(
        "() => document.querySelector('#data-count')?.innerText?.includes('Rows 1–12 of 12')"
    )
    shot(page, "30-flow-imported")

    page.get_by_role("tab", name="Train").click()
    page.get_by_label("Advanced settings (optional)").fill("epochs=1, batch_size=8")
    page.locator("#retrain").click()
    job = started_job(page)
    wait_for_job(page, job, "succeeded")
    page.get_by_role("tab", name="Versions").click()
    page.wait_for_function(
        "() => document.querySelector('#versions')?.innerText?.includes('ConvFiT Stage 2')"
    )
    shot(page, "31-flow-trained")

    page.get_by_role("tab", name="Try").click()
    page.locator("#try-text textarea").fill("where is my package")
    page.locator("#try-predict").click()
    page.wait_for_function(
        "() => document.querySelector('#try-explanation')?.innerText?.includes('Predicted track')"
    )
    assert "where is my parcel" in page.locator("#try-neighbours").inner_text() or (
        "has my order shipped" in page.locator("#try-neighbours").inner_text()
    )
    shot(page, "32-flow-try")

    page.get_by_role("tab", name="Train").click()
    page.get_by_role("tab", name="Export & share").click()
    with page.expect_download() as download:
        page.locator("#bundle-export").click()
        page.wait_for_function(
            "() => document.querySelector('#bundle-file a')?.href?.includes('.zip')",
            timeout=120_000,
        )
        page.locator("#bundle-file a").first.click()
    path = tmp_path / "bundle.zip"
    download.value.save_as(path)
    with zipfile.ZipFile(path) as z:
        assert {"manifest.json", "README.md", "vectors.npy"} <= set(z.namelist())
    shot(page, "33-flow-bundle")


def test_importing_into_new_project_names_keeps_the_page_working(server, page, tmp_path):
    """The Import panel's "a new name creates it": the picker gets the new project among its
    choices (it used to get only the value: every event reading the picker then failed with
    "Value: ... is not in the list of choices", and later imports with it, until a reload)."""
    src = tmp_path / "shop.csv"
    src.write_text(CSV, encoding="utf-8")
    page.goto(server.url)
    page.get_by_role("tab", name="Data").click()
    page.get_by_text("Import / export").click()
    target = page.get_by_label("Into project (empty = the current one; a new name creates it)")
    upload = page.locator("#import-file input[type=file]")
    clear = page.locator("#import-file button[aria-label='Clear']")
    for name, rows in (("imported shop", "Imported 12"), ("second shop", "Imported 12")):
        target.fill(name)
        if clear.count():  # the file of the import before
            clear.click()
        upload.set_input_files(str(src))
        page.locator("#import").click()
        page.wait_for_function(
            "(n) => document.querySelector('#project-summary')?.innerText?.includes(n)", arg=name
        )
        assert rows in page.locator("#import-status").inner_text()
        assert page.locator("#project input").input_value() == name
    # The picker works on: back to the first import, and an import into the current project.
    page.locator("#project input").click()
    page.get_by_role("option", name="imported shop").click()
    page.wait_for_function(
        "() => document.querySelector('#project-summary')?.innerText?.includes('imported shop')"
    )
    target.fill("")
    extra = tmp_path / "more.csv"
    extra.write_text("text,label\nwhere did my parcel go,track\n", encoding="utf-8")
    clear.click()
    upload.set_input_files(str(extra))
    page.locator("#import").click()
    page.wait_for_function(
        "() => document.querySelector('#import-status')?.innerText?.includes('Imported 1 ')"
    )
    assert "'imported shop'" in page.locator("#import-status").inner_text()
    shot(page, "31-imported-into-new-projects")
