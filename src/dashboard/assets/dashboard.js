// Halyard dashboard: the only script. Progressive: every page works without it.
// Copy buttons: <button data-copy="element-id"> copies that element's text.
document.addEventListener('click', (event) => {
  const button = event.target instanceof Element ? event.target.closest('button[data-copy]') : null
  if (!button) return
  const source = document.getElementById(button.getAttribute('data-copy') || '')
  if (!source) return
  const text = source.textContent || ''
  const done = () => {
    button.textContent = 'Copied'
  }
  if (navigator.clipboard) navigator.clipboard.writeText(text).then(done, () => selectText(source))
  else selectText(source)
})

function selectText(el) {
  const range = document.createRange()
  range.selectNodeContents(el)
  const sel = window.getSelection()
  sel.removeAllRanges()
  sel.addRange(range)
}
