import csv
import io

from ledgerly import Invoice, render_csv


def rows(text):
    return list(csv.reader(io.StringIO(text)))


def test_lines_and_summary():
    invoice = Invoice("INV-040", tax_rate=20)
    invoice.add_line("Consulting, remote", 10, "120.00")
    invoice.add_line("Travel", "1.5", "85.505")
    assert rows(render_csv(invoice)) == [
        ["description", "quantity", "unit_price_usd", "amount"],
        ["Consulting, remote", "10", "120.00", "1200.00"],
        ["Travel", "1.5", "85.505", "128.26"],
        ["subtotal", "", "", "1328.26"],
        ["tax", "", "", "265.65"],
        ["total", "", "", "1593.91"],
    ]


def test_discount_row_only_with_discount():
    invoice = Invoice("INV-041", currency="JPY", discount_percent=10)
    invoice.add_line("Tea", 3, "500")
    table = rows(render_csv(invoice))
    assert table[0][2] == "unit_price_jpy"
    assert table[-4:] == [["subtotal", "", "", "1500"], ["discount", "", "", "-150"], ["tax", "", "", "0"], ["total", "", "", "1350"]]
    assert "discount" not in render_csv(Invoice("INV-042"))
