/*
 * report.js: the script of the page `vprof html` writes (compiled into the
 * vprof binary by scripts/embed.sh and inlined into every page, so the page
 * needs no network and no other file). Two parts:
 *
 *  - a flame graph of the folded stacks in <script id="vprof-data">
 *    ({names: [...], stacks: [[count, nameIndex, ...], ...]}, root first):
 *    one absolutely positioned <div class="fr"> per frame, root at the
 *    bottom as in flamegraph.pl, children in name order. Click a frame to
 *    zoom to it (it and its ancestors span the width, its descendants
 *    scale with it, everything else is hidden); click the root or "Reset
 *    zoom" to come back. The search box takes a regular expression (a
 *    plain substring if it does not parse), case-insensitive: matching
 *    frames get the class "match" and the share of samples under them
 *    (each sample counted once) is shown.
 *  - sortable tables: a click on a column head of a table.sortable sorts
 *    its rows by that column (numbers by data-v, text by content); numbers
 *    go largest first, text A-Z, and a second click reverses.
 *
 * Every name reaches the page through JSON.parse and textContent, never
 * as markup.
 */
(function () {
	'use strict';

	var ROW = 18;           /* px per frame */
	var MIN_SHOW = 0.0005;  /* frames under this share of the view are hidden */

	function Frame(name, parent) {
		this.name = name;
		this.parent = parent;
		this.depth = parent ? parent.depth + 1 : 0;
		this.value = 0;
		this.kids = new Map();
		this.children = [];
		this.x = 0;       /* left edge, as a share of the whole profile */
		this.el = null;
	}

	function build(data) {
		var root = new Frame('all', null), maxDepth = 0;
		data.stacks.forEach(function (s) {
			var n = root, count = s[0];
			root.value += count;
			for (var i = 1; i < s.length; i++) {
				var name = data.names[s[i]], c = n.kids.get(name);
				if (!c) {
					c = new Frame(name, n);
					n.kids.set(name, c);
					n.children.push(c);
				}
				c.value += count;
				n = c;
			}
			maxDepth = Math.max(maxDepth, n.depth);
		});
		(function place(n) {
			var x = n.x;
			n.children.sort(function (a, b) { return a.name < b.name ? -1 : a.name > b.name ? 1 : 0; });
			n.children.forEach(function (c) {
				c.x = x;
				x += root.value ? c.value / root.value : 0;
				place(c);
			});
		})(root);
		return { root: root, maxDepth: maxDepth };
	}

	/* A warm colour from the name, stable from one page to the next. */
	function colour(name) {
		var h = 0;
		for (var i = 0; i < name.length; i++)
			h = (h * 31 + name.charCodeAt(i)) >>> 0;
		return 'hsl(' + (10 + h % 40) + ',' + (70 + (h >>> 8) % 25) + '%,' + (55 + (h >>> 16) % 12) + '%)';
	}

	function pct(v, total) {
		return total ? (100 * v / total).toFixed(2) + '%' : '0%';
	}

	function flame() {
		var box = document.getElementById('flame');
		var src = document.getElementById('vprof-data');
		if (!box || !src)
			return;
		var data = JSON.parse(src.textContent);
		var g = build(data), root = g.root, all = [];
		var info = document.getElementById('flame-info');
		var unit = data.unit || 'samples';
		box.style.height = (g.maxDepth + 1) * ROW + 'px';
		(function make(n) {
			var el = document.createElement('div');
			el.className = 'fr';
			el.textContent = n.name;
			el.title = n.name + '\n' + n.value + ' ' + unit + ' (' + pct(n.value, root.value) + ')';
			el.dataset.name = n.name;
			el.dataset.value = n.value;
			el.dataset.depth = n.depth;
			el.style.top = (g.maxDepth - n.depth) * ROW + 'px';
			el.style.background = n.depth ? colour(n.name) : '#bbb';
			el.addEventListener('click', function () { zoom(n); });
			el.addEventListener('mouseenter', function () {
				if (info)
					info.textContent = n.name + ': ' + n.value + ' ' + unit + ', ' +
						pct(n.value, root.value) + ' of all' +
						(view !== root ? ', ' + pct(n.value, view.value) + ' of the zoomed frame' : '');
			});
			n.el = el;
			all.push(n);
			box.appendChild(el);
			n.children.forEach(make);
		})(root);

		var view = root;
		function zoom(z) {
			view = z;
			var span = root.value ? z.value / root.value : 1;
			all.forEach(function (n) { n.el.style.display = 'none'; });
			for (var a = z; a; a = a.parent) {
				var s = a.el.style;
				s.left = '0%';
				s.width = '100%';
				s.display = '';
				a.el.classList.toggle('ancestor', a !== z);
			}
			(function under(n) {
				n.children.forEach(function (c) {
					var w = (root.value ? c.value / root.value : 0) / span, s = c.el.style;
					if (!(span > 0) || w < MIN_SHOW)
						return;      /* too thin to see, and so are its children */
					s.left = 100 * (c.x - z.x) / span + '%';
					s.width = 100 * w + '%';
					s.display = '';
					c.el.classList.remove('ancestor');
					under(c);
				});
			})(z);
			box.classList.toggle('zoomed', z !== root);
		}

		function search(term) {
			var re = null, matched = 0, out = document.getElementById('flame-match');
			if (term) {
				try { re = new RegExp(term, 'i'); } catch (e) {
					var t = term.toLowerCase();
					re = { test: function (s) { return s.toLowerCase().indexOf(t) >= 0; } };
				}
			}
			(function walk(n, covered) {
				var hit = !!re && n !== root && re.test(n.name);
				n.el.classList.toggle('match', hit);
				if (hit && !covered)
					matched += n.value;      /* each sample once, at its outermost match */
				n.children.forEach(function (c) { walk(c, covered || hit); });
			})(root, false);
			if (out)
				out.textContent = re ? 'matched: ' + pct(matched, root.value) + ' (' + matched + ' ' + unit + ')' : '';
		}

		var input = document.getElementById('flame-search');
		if (input)
			input.addEventListener('input', function () { search(input.value); });
		var reset = document.getElementById('flame-reset');
		if (reset)
			reset.addEventListener('click', function () { zoom(root); });
		zoom(root);
	}

	function sortable(table) {
		var heads = table.tHead ? table.tHead.rows[0].cells : [];
		Array.prototype.forEach.call(heads, function (th, col) {
			th.addEventListener('click', function () {
				var num = th.dataset.type === 'num';
				var dir = th.dataset.dir ? -Number(th.dataset.dir) : (num ? -1 : 1);
				Array.prototype.forEach.call(heads, function (h) { delete h.dataset.dir; h.removeAttribute('aria-sort'); });
				th.dataset.dir = dir;
				th.setAttribute('aria-sort', dir > 0 ? 'ascending' : 'descending');
				var body = table.tBodies[0];
				var rows = Array.prototype.slice.call(body.rows);
				rows.sort(function (a, b) {
					var x = a.cells[col], y = b.cells[col], r;
					if (num)
						r = Number(x.dataset.v) - Number(y.dataset.v);
					else {
						/* case-insensitive, code-point order: the same
						 * in every locale ([kernel] before names) */
						var p = x.textContent.toLowerCase(), q = y.textContent.toLowerCase();
						r = p < q ? -1 : p > q ? 1 : 0;
					}
					return dir * r;
				});
				rows.forEach(function (r) { body.appendChild(r); });
			});
		});
	}

	function start() {
		flame();
		Array.prototype.forEach.call(document.querySelectorAll('table.sortable'), sortable);
		document.body.dataset.ready = '1';
	}
	if (document.readyState === 'loading')
		document.addEventListener('DOMContentLoaded', start);
	else
		start();
})();
