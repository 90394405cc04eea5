// Upload page: drag and drop a file onto the drop zone (the file input stays the source of truth).
document.addEventListener("DOMContentLoaded", () => {
  const zone = document.getElementById("dropzone");
  if (!zone) return;
  const input = zone.querySelector("input[type=file]");
  const shown = document.getElementById("drop-file");
  const catalog = document.getElementById("id_catalog");
  const newCatalog = document.getElementById("new-catalog-field");
  const showName = () => { shown.textContent = input.files.length ? input.files[0].name : ""; };
  input.addEventListener("change", showName);
  ["dragenter", "dragover"].forEach((type) => zone.addEventListener(type, (event) => {
    event.preventDefault();
    zone.classList.add("dragging");
  }));
  ["dragleave", "drop"].forEach((type) => zone.addEventListener(type, () => zone.classList.remove("dragging")));
  zone.addEventListener("drop", (event) => {
    event.preventDefault();
    if (event.dataTransfer.files.length) {
      input.files = event.dataTransfer.files;
      showName();
    }
  });
  // The new-catalog name only matters when no existing catalog is chosen.
  const toggle = () => { newCatalog.hidden = Boolean(catalog.value); };
  catalog.addEventListener("change", toggle);
  toggle();
});
