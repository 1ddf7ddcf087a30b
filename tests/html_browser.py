#!/usr/bin/python3
"""Drive a page written by `vprof html` in headless Chromium (tests/html.sh).

    html_browser.py MODE PAGE EXPECT.json [SCREENSHOT.png]

MODE main: the flame graph renders (hot_leaf's width share within 3 points
of its sample share), zooms on click, resets, search highlights, the table
sorts, the hottest procedure's listing has source lines. MODE values: the
listing of hot_leaf shows a hotlist whose top value is EXPECT["value"].
MODE deep: the page's flame graph fed synthetic deep stacks instead (the
page copied with its data replaced; the C side gives two levels until
call stacks are recorded): widths at depth, zoom on a middle frame (its
descendants rescale, siblings hide), search counts each sample once
across nested and recursive matches. MODE views: the invariants and
latency views hold EXPECT's rows (the commands' sentences, in order, and
typed values; doubles read as numbers), the listings show double operands
as numbers, the views link to listings and sort. MODE memory: the memory
view holds EXPECT's rows (vprof memory's procedures and rates, in order)
and its objects (vprof memory --by object's, in order)
and both sort. MODE cxx: names with < > & survive (table cell and flame frame text equal
the demangled name, and no element was made of them). Every mode: the page
loads no resource, logs no error, and Chromium runs with the network off
(offline emulation, a dead proxy, no name resolution).

Prints PASS/FAIL lines; exits 0 unless the browser could not be driven.
Kills only the chromedriver it started (by pid), and Chromium with it.
"""
import json
import os
import re
import sys
import tempfile
import time

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By

mode, page, expect_path = sys.argv[1:4]
shot = sys.argv[4] if len(sys.argv) > 4 else None
expect = json.load(open(expect_path))
nfail = 0


def check(ok, what):
    global nfail
    print(("PASS " if ok else "FAIL ") + what)
    if not ok:
        nfail += 1


profile = tempfile.mkdtemp(prefix="vprof-html-chromium.")
if mode == "deep":
    # main;a;b;leaf 40, main;a;c 20, main;d;b;leaf 30, main;a;a2;a 10
    names = ["main", "a", "b", "leaf", "c", "d", "a2"]
    deep = {"unit": "samples", "event": "task-clock", "total": 100, "names": names,
            "stacks": [[40, 0, 1, 2, 3], [20, 0, 1, 4], [30, 0, 5, 2, 3], [10, 0, 1, 6, 1]]}
    html = open(page).read()
    new, n = re.subn(r'(<script type="application/json" id="vprof-data">).*?(</script>)',
                     lambda m: m.group(1) + json.dumps(deep) + m.group(2), html, flags=re.S)
    page = os.path.join(profile, "deep.html")
    open(page, "w").write(new)
    print(("PASS" if n == 1 else "FAIL") + " the page's flame data replaced by deep stacks")
opts = webdriver.ChromeOptions()
opts.binary_location = "/usr/bin/chromium"
for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
          "--window-size=1400,1000", "--no-first-run", "--disable-background-networking",
          "--disable-component-update", "--disable-sync", "--disable-extensions",
          "--proxy-server=http://127.0.0.1:9", "--proxy-bypass-list=<-loopback>",
          "--host-resolver-rules=MAP * ~NOTFOUND", "--user-data-dir=" + profile):
    opts.add_argument(a)
opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
service = Service("/usr/bin/chromedriver", log_path=os.devnull)
driver = webdriver.Chrome(service=service, options=opts)


def js(code, *args):
    return driver.execute_script(code, *args)


def frame(name):
    return driver.find_element(By.CSS_SELECTOR, '#flame .fr[data-name="%s"]' % name)


def share(el):
    """An element's width over the flame graph's, in percent (0 if hidden)."""
    return js("var e = arguments[0], b = document.getElementById('flame');"
              "return e.offsetParent ? 100 * e.getBoundingClientRect().width / b.clientWidth : 0;", el)


try:
    try:
        driver.set_network_conditions(offline=True, latency=0, download_throughput=0,
                                      upload_throughput=0)
        offline = True
    except Exception as e:  # noqa: BLE001 - reported, the other guards stay
        offline = False
        print("note: offline emulation unavailable: %s" % e)
    driver.get("file://" + os.path.abspath(page))
    for _ in range(100):
        if js("return document.body && document.body.dataset.ready === '1'"):
            break
        time.sleep(0.05)
    check(js("return document.body.dataset.ready === '1'"), "the page's script ran (body ready)")
    check(offline, "Chromium's network emulation is offline")
    nres = js("return performance.getEntriesByType('resource').length")
    check(nres == 0, "the page loaded no resource (%s)" % nres)

    if mode == "main":
        frames = driver.find_elements(By.CSS_SELECTOR, "#flame .fr")
        check(len(frames) >= 5, "the flame graph rendered %d frames" % len(frames))
        hot = frame("hot_leaf")
        want = expect["hot_leaf"]
        got = share(hot)
        check(hot.is_displayed() and abs(got - want) <= 3,
              "hot_leaf's frame is %.1f%% of the width, its sample share %.1f%% (limit 3 points)" % (got, want))
        check(hot.text.startswith("hot_leaf"), "hot_leaf's frame is labelled (%r)" % hot.text)
        image = frame(expect["image"])
        want_img = expect.get("image_share", 100)
        check(abs(share(image) - want_img) <= 0.5,
              "the image frame spans its rows' share of the width (%.1f%%, %.1f%%)" % (share(image), want_img))
        warm0 = share(frame("warm"))

        hot.click()
        check(abs(share(hot) - 100) <= 0.5, "after a click hot_leaf spans the width (%.1f%%)" % share(hot))
        check(share(frame("warm")) == 0 and not frame("warm").is_displayed(),
              "after the click warm (not under hot_leaf) is hidden (%.1f%% before)" % warm0)
        check(abs(share(image) - 100) <= 0.5, "the ancestor stays full width")
        check("zoomed" in driver.find_element(By.ID, "flame").get_attribute("class"), "the graph says it is zoomed")
        frame("all").click()
        check(abs(share(hot) - want) <= 3 and abs(share(frame("warm")) - warm0) <= 0.1,
              "clicking the root zooms back (hot_leaf %.1f%%, warm %.1f%%)" % (share(hot), share(frame("warm"))))
        hot.click()
        driver.find_element(By.ID, "flame-reset").click()
        check(abs(share(hot) - want) <= 3, "Reset zoom zooms back (hot_leaf %.1f%%)" % share(hot))

        box = driver.find_element(By.ID, "flame-search")
        box.send_keys("warm")
        warm = frame("warm")
        bg_hit = warm.value_of_css_property("background-color")
        bg_other = hot.value_of_css_property("background-color")
        check("match" in warm.get_attribute("class") and "match" not in hot.get_attribute("class"),
              "search 'warm' marks warm and not hot_leaf")
        check(bg_hit != bg_other and bg_hit.replace(" ", "") in ("rgb(238,0,255)", "rgba(238,0,255,1)"),
              "the match is highlighted (%s, hot_leaf %s)" % (bg_hit, bg_other))
        mtext = driver.find_element(By.ID, "flame-match").text
        m = re.search(r"matched: ([\d.]+)%", mtext)
        check(m and abs(float(m.group(1)) - expect["warm"]) <= 0.1,
              "the search reports warm's share (%r, sample share %.2f%%)" % (mtext, expect["warm"]))
        box.clear()
        box.send_keys("^(hot_leaf|cool)$")
        nmatch = len(driver.find_elements(By.CSS_SELECTOR, "#flame .fr.match"))
        check(nmatch == 2, "a regular expression matches two frames (%d)" % nmatch)

        def column(i):
            return [r.find_elements(By.TAG_NAME, "td")[i].text
                    for r in driver.find_elements(By.CSS_SELECTOR, "#procs tbody tr")]
        names = column(1)
        check(names and names[0] == "hot_leaf", "the table starts with hot_leaf (%s)" % names[:3])
        heads = driver.find_elements(By.CSS_SELECTOR, "#procs thead th")
        heads[1].click()
        names = column(1)
        check(len(names) >= 3 and names == sorted(names, key=str.lower),
              "a click on 'procedure' sorts by name (%s)" % names)
        heads[3].click()
        nums = [int(x) for x in column(3)]
        check(nums == sorted(nums, reverse=True), "a click on 'samples' sorts largest first (%s)" % nums)
        heads[3].click()
        nums = [int(x) for x in column(3)]
        check(nums == sorted(nums) and nums[0] < nums[-1], "a second click reverses (%s)" % nums)

        title = driver.find_element(By.CSS_SELECTOR, "#dis-1 h3").text
        check(title == "hot_leaf", "the first listing is hot_leaf's (%r)" % title)
        ninsn = len(driver.find_elements(By.CSS_SELECTOR, "#dis-1 tr.insn"))
        srcs = [e.text for e in driver.find_elements(By.CSS_SELECTOR, "#dis-1 tr.src")]
        check(ninsn >= 5, "hot_leaf's listing has %d instructions" % ninsn)
        check(any("html_hot.c:" in s and "x = x * k" in s for s in srcs),
              "the listing shows source lines with their text (%s)" % srcs[:2])
        sampled = [int(e.text) for e in driver.find_elements(By.CSS_SELECTOR, "#dis-1 tr.insn td.n:first-child")
                   if e.text.strip()]
        check(sum(sampled) == expect["hot_leaf_samples"],
              "the listing's samples add up to hot_leaf's (%d of %d)" % (sum(sampled), expect["hot_leaf_samples"]))
        link = driver.find_element(By.CSS_SELECTOR, '#procs a[href="#dis-1"]')
        check(link.text == "hot_leaf", "the table links hot_leaf to its listing")

    elif mode == "deep":
        def at(name, depth):
            """The frames named name at depth, widest first."""
            els = driver.find_elements(By.CSS_SELECTOR, '#flame .fr[data-name="%s"][data-depth="%d"]' % (name, depth))
            return sorted(els, key=lambda e: -int(e.get_attribute("data-value")))

        def near(got, want, what):
            check(abs(got - want) <= 0.5, "%s: %.1f%% of the width (want %.1f%%)" % (what, got, want))
        near(share(at("main", 1)[0]), 100, "main")
        near(share(at("a", 2)[0]), 70, "main;a")
        near(share(at("d", 2)[0]), 30, "main;d")
        bs = at("b", 3)
        check(len(bs) == 2, "b has a frame under a and one under d (%d)" % len(bs))
        near(share(bs[0]), 40, "main;a;b")
        near(share(bs[1]), 30, "main;d;b")
        near(share(at("a", 4)[0]), 10, "main;a;a2;a (recursion)")
        nfr = len(driver.find_elements(By.CSS_SELECTOR, "#flame .fr"))
        check(nfr == 11, "one frame per distinct path prefix: 11 (%d)" % nfr)
        a = at("a", 2)[0]
        a.click()
        near(share(a), 100, "zoomed on main;a: it")
        near(share(at("main", 1)[0]), 100, "zoomed on main;a: its ancestor main")
        near(share(bs[0]), 100 * 40 / 70, "zoomed on main;a: main;a;b")
        near(share(at("c", 3)[0]), 100 * 20 / 70, "zoomed on main;a: main;a;c")
        near(share(at("a", 4)[0]), 100 * 10 / 70, "zoomed on main;a: main;a;a2;a")
        check(not at("d", 2)[0].is_displayed() and not bs[1].is_displayed(),
              "zoomed on main;a: main;d and its b are hidden")
        bs[0].click()
        near(share(at("leaf", 4)[0]), 100, "zoomed on main;a;b: its only child leaf")
        at("all", 0)[0].click()
        near(share(bs[1]), 30, "back at the root: main;d;b")
        box = driver.find_element(By.ID, "flame-search")
        for term, want in (("^a$", 70), ("leaf", 70), ("^(b|leaf)$", 70), ("^a2$", 10), ("main", 100),
                           ("nothing", 0)):
            box.clear()
            box.send_keys(term)
            mtext = driver.find_element(By.ID, "flame-match").text
            m = re.search(r"matched: ([\d.]+)%", mtext)
            check(m and abs(float(m.group(1)) - want) < 0.01,
                  "search %r matches %s%% of the samples, each once (%r)" % (term, want, mtext))
        box.clear()
        box.send_keys("^a$")
        check(len(driver.find_elements(By.CSS_SELECTOR, "#flame .fr.match")) == 2,
              "search '^a$' marks both a frames")

    elif mode == "values":
        rows = [e.text for e in driver.find_elements(By.CSS_SELECTOR, "#dis-1 tr.hot")]
        check(len(rows) > 0, "hot_leaf's listing has %d hotlist rows" % len(rows))
        want = expect["value"]
        top = [r for r in rows if re.search(r":\s*" + re.escape(want) + r" (\d+\.\d)%", r)
               and float(re.search(r":\s*" + re.escape(want) + r" (\d+\.\d)%", r).group(1)) >= 90]
        check(len(top) > 0, "a hotlist's top value is %s at >= 90%% (%s)" % (want, top[:1] or rows[:2]))

    elif mode == "views":
        nav = [a.get_attribute("href").split("#")[1]
               for a in driver.find_elements(By.CSS_SELECTOR, "p.nav a")]
        check("invariants" in nav and "latency" in nav and
              all(js("return !!document.getElementById(arguments[0])", n) for n in nav),
              "the page's links lead to its sections, the views among them (%s)" % nav)

        def view(tid):
            return driver.find_elements(By.CSS_SELECTOR, "#%s tbody tr" % tid)
        rows = view("invariants-table")
        got = [(r.find_element(By.CSS_SELECTOR, ".sentence").text,
                r.find_element(By.CSS_SELECTOR, "td.val").text,
                r.find_element(By.CSS_SELECTOR, "td.val").get_attribute("data-type")) for r in rows]
        want = [tuple(x) for x in expect["inv"]]
        check(len(got) > 0 and got == want,
              "the invariants view has vprof invariants' %d rows, in order, with their values "
              "(first: %s)" % (len(want), got[:1] or "none"))
        doubles = [v for _, v, t in got if t and t.startswith("double")]
        check(doubles and all(re.match(r"^-?(\d+\.\d*|\d+(\.\d*)?e[-+]?\d+|inf|nan)", v)
                              for v in doubles),
              "its double values read as numbers (%s)" % doubles[:4])
        check(any(v == "3.0" for v in doubles), "pow's exponent reads 3.0 (%s)" % doubles[:4])
        lat = [r.find_element(By.CSS_SELECTOR, ".sentence").text for r in view("latency-table")]
        check(len(lat) > 0 and lat == expect["lat"],
              "the latency view has vprof latency's %d rows, in order (first: %s)" %
              (len(expect["lat"]), lat[:1] or "none"))
        # the listings: a hotlist under an SSE double arithmetic instruction
        # shows decimal numbers, not the bits in hex
        sse = js("""var out = [];
            document.querySelectorAll('table.dis tr.insn').forEach(function (tr) {
                var t = tr.cells[3].textContent;
                if (!/^v?(add|sub|mul|div|min|max)sd /.test(t)) return;
                for (var n = tr.nextElementSibling; n && n.classList.contains('hot'); n = n.nextElementSibling)
                    if (/^(src1|src2|result)( |$)/.test(n.querySelector('.kind').textContent))
                        n.querySelectorAll('.val').forEach(function (v) { out.push(t + ': ' + v.textContent); });
            });
            return out;""")
        check(sse and not any(": 0x" in v for v in sse),
              "the listings' double operands read as numbers (%d values, e.g. %s)" % (len(sse), sse[:2]))
        link = driver.find_elements(By.CSS_SELECTOR, "#invariants-table a[href^='#dis-'], #latency-table a[href^='#dis-']")
        check(link and all(js("return !!document.getElementById(arguments[0])", a.get_attribute("href").split("#")[1])
                           for a in link),
              "the views link to %d listings on the page" % len(link))
        heads = driver.find_elements(By.CSS_SELECTOR, "#invariants-table thead th")
        heads[1].click()
        times = [float(r.find_elements(By.TAG_NAME, "td")[1].get_attribute("data-v")) for r in view("invariants-table")]
        check(times == sorted(times, reverse=True), "a click on 'time' sorts the invariants by time (%s)" % times[:5])

    elif mode == "memory":
        nav = [a.get_attribute("href").split("#")[1]
               for a in driver.find_elements(By.CSS_SELECTOR, "p.nav a")]
        check("memory" in nav and js("return !!document.getElementById('memory')"),
              "the page links to its memory section (%s)" % nav)
        rows = driver.find_elements(By.CSS_SELECTOR, "#memory-table tbody tr")
        got = [[c.text for c in r.find_elements(By.TAG_NAME, "td")] for r in rows]
        want = expect["rows"]
        check(len(got) > 0 and [g[5] for g in got] == [w[0] for w in want] and
              [g[2] for g in got] == [w[1] for w in want] and [g[3] for g in got] == [w[2] for w in want],
              "the memory view has vprof memory's %d rows, in order, with their rates (first: %s)" %
              (len(want), got[:1] or "none"))
        heads = driver.find_elements(By.CSS_SELECTOR, "#memory-table thead th")
        heads[1].click()
        refs = [float(r.find_elements(By.TAG_NAME, "td")[1].get_attribute("data-v"))
                for r in driver.find_elements(By.CSS_SELECTOR, "#memory-table tbody tr")]
        check(refs == sorted(refs, reverse=True), "a click on 'refs' sorts the rows by references (%s)" % refs[:4])
        objs = [r.find_elements(By.TAG_NAME, "td")[5].text
                for r in driver.find_elements(By.CSS_SELECTOR, "#memory-objects-table tbody tr")]
        check(len(objs) > 0 and objs == expect["objects"],
              "the data objects table has vprof memory --by object's %d rows, in order (%s)" %
              (len(expect["objects"]), objs[:4]))

    elif mode == "cxx":
        name = expect["name"]
        cells = [e.text for e in driver.find_elements(By.CSS_SELECTOR, "#procs td.name")]
        check(name in cells, "the table names %s exactly (%s)" % (name, cells[:3]))
        fr = driver.find_elements(By.CSS_SELECTOR, "#flame .fr")
        check(any(e.get_attribute("data-name") == name and e.text.startswith(name[:10]) for e in fr),
              "a flame frame is named %s" % name)
        check(js("return document.getElementsByTagName('int').length") == 0,
              "no <int> element was made of the name")
        titles = [e.text for e in driver.find_elements(By.CSS_SELECTOR, ".proc h3")]
        check(name in titles, "a listing is titled %s" % name)

    errors = [l for l in driver.get_log("browser") if l.get("level") == "SEVERE"]
    check(not errors, "no errors in the console (%s)" % errors[:2])
    if shot:
        driver.refresh()      # the page as it opens, pointing at hot_leaf
        for _ in range(100):
            if js("return document.body && document.body.dataset.ready === '1'"):
                break
            time.sleep(0.05)
        if mode == "main":
            from selenium.webdriver.common.action_chains import ActionChains
            ActionChains(driver).move_to_element(frame("hot_leaf")).perform()
        driver.save_screenshot(shot)
        check(os.path.getsize(shot) > 10000, "screenshot written (%d bytes)" % os.path.getsize(shot))
finally:
    pid = service.process.pid if service.process else None
    try:
        driver.quit()
    finally:
        if pid and service.process.poll() is None:
            os.kill(pid, 9)
        import shutil
        shutil.rmtree(profile, ignore_errors=True)
sys.exit(0)
