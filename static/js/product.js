// A product's page: a value accepted, corrected or set n/a in place comes back as its cell; a
// conflict (409) or a refused correction (400) comes back as the cell with its message: show it.
htmx.config.responseHandling = [
  { code: "204", swap: false },
  { code: "[23]..", swap: true },
  { code: "40[09]", swap: true, error: false },
  { code: "[45]..", swap: false, error: true },
];
